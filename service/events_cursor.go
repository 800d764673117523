package service

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
)

// eventPos is a position in a tenant's event stream: the writing
// transaction's xid8, then the event id (see eventsAfterTenant). The zero
// position is before every event.
type eventPos struct {
	tx int64
	id int64
}

// eventCursorPrefix marks the cursor's version, and keeps a cursor from
// ever being all digits, so an id from the old id-ordered stream cannot be
// mistaken for one.
const eventCursorPrefix = "e"

// eventCursorBytes is the cursor's payload: two big-endian int64.
const eventCursorBytes = 16

// String is the opaque cursor clients pass back as `after`.
func (p eventPos) String() string {
	var b [eventCursorBytes]byte
	binary.BigEndian.PutUint64(b[:8], uint64(p.tx))
	binary.BigEndian.PutUint64(b[8:], uint64(p.id))
	return eventCursorPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// StartCursor is the cursor before every event: what "read from 0" means.
const StartCursor = "0"

// decodeEventCursor reads a cursor from String; "" and StartCursor are the
// start. Any other plain number is a watermark of the id-ordered stream,
// which cannot be mapped to a position without skipping or repeating
// events, so it is refused with a message that says what to do.
func decodeEventCursor(s string) (eventPos, error) {
	if s == "" || s == StartCursor {
		return eventPos{}, nil
	}
	if strings.Trim(s, "0123456789") == "" {
		return eventPos{}, &InvalidError{Msg: `"after" is a numeric watermark of an older server: events are now paged by an opaque cursor; pass 0 to read from the start, then each page's watermark`}
	}
	raw, ok := strings.CutPrefix(s, eventCursorPrefix)
	b, err := base64.RawURLEncoding.Strict().DecodeString(raw)
	if !ok || err != nil || len(b) != eventCursorBytes {
		return eventPos{}, &InvalidError{Msg: `"after" is not an event cursor: pass 0 or a watermark this server returned`}
	}
	p := eventPos{tx: int64(binary.BigEndian.Uint64(b[:8])), id: int64(binary.BigEndian.Uint64(b[8:]))}
	// Canonical only: the decoder skips line breaks, and two spellings of
	// one cursor are one too many.
	if p.tx < 0 || p.id < 0 || p.String() != s {
		return eventPos{}, &InvalidError{Msg: `"after" is not an event cursor: pass 0 or a watermark this server returned`}
	}
	return p, nil
}
