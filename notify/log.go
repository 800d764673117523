package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
)

// logChannel prints the webhook payload to the log: `make run` uses it so a
// newcomer sees what a receiver would get, with no receiver to set up.
type logChannel struct {
	name     string
	withArgs bool
	logger   *slog.Logger
}

func (l *logChannel) Name() string           { return l.name }
func (l *logChannel) Type() string           { return TypeLog }
func (l *logChannel) IncludeArguments() bool { return l.withArgs }

func (l *logChannel) Deliver(ctx context.Context, d Delivery) (Result, error) {
	body, err := json.Marshal(payload(d.Message, l.withArgs))
	if err != nil {
		return Result{}, Permanent(fmt.Errorf("encode payload: %w", err))
	}
	l.logger.LogAttrs(ctx, slog.LevelInfo, "notification", slog.String("channel", l.name), slog.Any("payload", json.RawMessage(body)))
	return Result{}, nil
}
