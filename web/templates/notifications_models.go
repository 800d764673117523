package templates

import "time"

// NotificationsPage is the delivery log: the configured channels (each
// with a test-send) and the newest deliveries with every attempt.
type NotificationsPage struct {
	Page
	Channels   []NotificationChannel
	CanTest    bool // approval.resolve: test-sends are for whoever is notified
	Deliveries []NotificationDelivery
}

// NotificationChannel is one configured channel.
type NotificationChannel struct{ Name, Type string }

// NotificationDelivery is one delivery of one notification to one channel.
type NotificationDelivery struct {
	Kind       string
	ApprovalID string
	Channel    string
	Status     string
	Attempts   int
	LastError  string
	Created    time.Time
	NextTry    *time.Time // pending only
	Tries      []NotificationTry
}

// NotificationTry is one attempt.
type NotificationTry struct {
	Attempt    int
	Started    time.Time
	Latency    string
	HTTPStatus int
	Outcome    string
	Error      string
	Replica    string
}
