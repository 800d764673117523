package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// All SQL of push_vapid_keys (migrations/00013_push_subscriptions.sql).
const (
	vapidKeyGet = `SELECT public_key, private_key FROM push_vapid_keys WHERE singleton`

	// The first replica to insert wins; the others' pairs are dropped.
	vapidKeyInsert = `
INSERT INTO push_vapid_keys (singleton, public_key, private_key, created_at)
VALUES (true, $1, $2, $3)
ON CONFLICT (singleton) DO NOTHING`
)

// vapidKeysGet reads the stored pair; ok is false when there is none yet.
func vapidKeysGet(ctx context.Context, db DBTX) (public, private string, ok bool, err error) {
	err = db.QueryRow(ctx, vapidKeyGet).Scan(&public, &private)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", false, nil
	}
	return public, private, err == nil, err
}

func vapidKeysInsert(ctx context.Context, db DBTX, public, private string, now time.Time) error {
	_, err := db.Exec(ctx, vapidKeyInsert, public, private, now)
	return err
}

// errVAPIDVanished is a pair that was inserted or found and then not read
// back: someone deleted the row mid-call.
var errVAPIDVanished = errors.New("push: the VAPID key pair was deleted while it was being read")

// VAPIDKeys returns the VAPID key pair every replica signs Web Push with
// (base64url, as webpush-go writes them). The first call on an empty
// database generates a pair and stores it; replicas starting at once may
// each generate one, but only the first insert is kept and every caller
// returns the stored pair. The private key lives in the database: whoever
// reads the table can send pushes to the subscribed browsers (set
// CONSOLE_VAPID_PUBLIC_KEY and CONSOLE_VAPID_PRIVATE_KEY to keep it out).
//
// It is a function of the database, not a Service method: the notifier's
// Web Push channel needs the pair before the Service it runs in exists.
func VAPIDKeys(ctx context.Context, db DBTX, now time.Time, generate func() (public, private string, err error)) (public, private string, err error) {
	public, private, ok, err := vapidKeysGet(ctx, db)
	if err != nil {
		return "", "", fmt.Errorf("push: read VAPID keys: %w", err)
	}
	if ok {
		return public, private, nil
	}
	genPublic, genPrivate, err := generate()
	if err != nil {
		return "", "", fmt.Errorf("push: generate VAPID keys: %w", err)
	}
	if genPublic == "" || genPrivate == "" {
		return "", "", errors.New("push: generated VAPID keys are empty")
	}
	if err := vapidKeysInsert(ctx, db, genPublic, genPrivate, now); err != nil {
		return "", "", fmt.Errorf("push: store VAPID keys: %w", err)
	}
	public, private, ok, err = vapidKeysGet(ctx, db)
	switch {
	case err != nil:
		return "", "", fmt.Errorf("push: read VAPID keys: %w", err)
	case !ok:
		return "", "", errVAPIDVanished
	}
	return public, private, nil
}
