package main

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"gatehouse/notify"
	"gatehouse/service"
)

// notifierInterval is how often a replica looks for due deliveries it was
// not woken for: retries coming due, and notifications other replicas
// wrote.
const notifierInterval = time.Second

// demoNotify is what `make run` notifies with when CONSOLE_NOTIFY is unset:
// every approval change, printed to the server log, so a newcomer sees the
// payloads a webhook would receive.
const demoNotify = `channels:
  - name: demo-log
    type: log
routes:
  - tenants: ["*"]
    channels: [demo-log]
`

// loadNotify reads CONSOLE_NOTIFY, checked at start like the other files;
// --demo without one prints notifications to the log.
func loadNotify(cfg serveConfig) (*notify.Config, error) {
	switch {
	case cfg.notifyFile != "":
		c, err := notify.LoadConfig(cfg.notifyFile, os.Getenv)
		if err != nil {
			return nil, fmt.Errorf("loading notifications: %w", err)
		}
		return c, nil
	case cfg.demo:
		return notify.ParseConfig("demo notifications", []byte(demoNotify), os.Getenv)
	}
	return nil, nil
}

// notifications builds the channels of the loaded file and the service's
// delivery policy from it; nil when nothing is configured.
func notifications(cfg serveConfig, in serveInputs, vapid vapidKeys, logger *slog.Logger) (*service.Notifications, error) {
	if in.notify == nil {
		return nil, nil
	}
	channels, err := in.notify.Build(notify.BuildOptions{
		Logger: logger,
		VAPID:  notify.VAPIDKeys{Public: vapid.public, Private: vapid.private},
		// The VAPID sub claim: push services write to it about abuse.
		Subscriber: vapidSubscriber(cfg.baseURL),
	})
	if err != nil {
		return nil, fmt.Errorf("notification channels: %w", err)
	}
	d := in.notify.Delivery
	return &service.Notifications{
		Channels:       channels,
		Route:          in.notify.Routes,
		MaxAttempts:    d.MaxAttempts,
		Backoff:        func(failed int) time.Duration { return d.Backoff(failed, rand.Float64) },
		Timeout:        d.Timeout,
		ExpiringShare:  d.ExpiringShare,
		ExpiringBefore: d.ExpiringBefore,
		BaseURL:        cfg.baseURL,
	}, nil
}

// vapidSubscriber is the contact a push service sees: the console's own
// https origin, or a local mailbox name for a console on plain http.
func vapidSubscriber(baseURL string) string {
	if strings.HasPrefix(baseURL, "https://") {
		return baseURL
	}
	return "mailto:gatehouse@localhost"
}
