package service

import (
	"context"
	"fmt"

	"gatehouse/engine"
)

// EventWatermark returns the cursor to start polling ListEvents from when
// only what happens next matters (the console's live queue): the
// snapshot's xmin. Every event of an older transaction is visible now and
// sorts before it; every other event sorts after it, however late it
// commits.
func (s *Service) EventWatermark(ctx context.Context, _ engine.Principal) (string, error) {
	pos, err := eventsWatermark(ctx, s.pool)
	if err != nil {
		return "", fmt.Errorf("service: event watermark: %w", err)
	}
	return pos.String(), nil
}
