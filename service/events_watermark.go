package service

import (
	"context"
	"fmt"

	"gatehouse/engine"
)

// eventWatermarkLatest is the newest event id a reader may see now, with
// the same visibility rule as eventListAfter, so polling ListEvents from it
// misses nothing committed later.
const eventWatermarkLatest = `
SELECT COALESCE(max(id), 0)
  FROM events
 WHERE tenant_id = $1
   AND tx_id < pg_snapshot_xmin(pg_current_snapshot())`

// EventWatermark returns the watermark to start polling ListEvents from
// when only what happens next matters (the console's live queue).
func (s *Service) EventWatermark(ctx context.Context, p engine.Principal) (int64, error) {
	var id int64
	if err := s.pool.QueryRow(ctx, eventWatermarkLatest, p.TenantID).Scan(&id); err != nil {
		return 0, fmt.Errorf("service: event watermark: %w", err)
	}
	return id, nil
}
