package service

import (
	"errors"
	"testing"
	"time"

	"gatehouse/engine"
)

// FuzzDecodeCursor: a cursor is client input. It decodes to a position with
// a valid id or is refused as invalid; an encoded position decodes back to
// itself.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(approvalCursor{Rank: 3, At: time.Date(2026, 12, 2, 4, 5, 6, 7, time.UTC), ID: "00000000-0000-4000-8000-000000000001"}))
	f.Add(encodeCursor(approvalCursor{At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), ID: "ffffffff-ffff-ffff-ffff-ffffffffffff"}))
	f.Add("")
	f.Add("not base64!")
	f.Add("eyJyIjo5OTk5OX0")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeCursor(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("decode %q: %v is not ErrInvalid", s, err)
			}
			return
		}
		if c == nil {
			if s != "" {
				t.Fatalf("decode %q: no position and no error", s)
			}
			return
		}
		if !engine.ValidUUID(c.ID) {
			t.Fatalf("decode %q: invalid id %q accepted", s, c.ID)
		}
		again, err := decodeCursor(encodeCursor(*c))
		if err != nil || again.Rank != c.Rank || !again.At.Equal(c.At) || again.ID != c.ID {
			t.Fatalf("round trip of %+v: %+v %v", c, again, err)
		}
	})
}

// FuzzDecodeEventCursor: an event cursor is client input. It decodes to a
// non-negative position or is refused as invalid; a position decodes back
// to itself from its string.
func FuzzDecodeEventCursor(f *testing.F) {
	f.Add(eventPos{tx: 741, id: 12}.String())
	f.Add(eventPos{tx: 1<<63 - 1, id: 1<<63 - 1}.String())
	f.Add("0")
	f.Add("42")
	f.Add("e_____________________")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := decodeEventCursor(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("decode %q: %v is not ErrInvalid", s, err)
			}
			return
		}
		if p.tx < 0 || p.id < 0 {
			t.Fatalf("decode %q: negative position %+v", s, p)
		}
		if p != (eventPos{}) && p.String() != s {
			t.Fatalf("decode %q: %+v encodes as %q", s, p, p.String())
		}
	})
}
