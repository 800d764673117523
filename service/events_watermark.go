package service

import (
	"context"
	"fmt"

	"gatehouse/engine"
)

// eventWatermarkNow is the oldest transaction still running.
const eventWatermarkNow = `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`

// EventWatermark returns the cursor to start polling ListEvents from when
// only what happens next matters (the console's live queue): the
// snapshot's xmin. Every event of an older transaction is visible now and
// sorts before it; every other event sorts after it, however late it
// commits.
func (s *Service) EventWatermark(ctx context.Context, _ engine.Principal) (string, error) {
	var xmin int64
	if err := s.pool.QueryRow(ctx, eventWatermarkNow).Scan(&xmin); err != nil {
		return "", fmt.Errorf("service: event watermark: %w", err)
	}
	return eventPos{tx: xmin}.String(), nil
}
