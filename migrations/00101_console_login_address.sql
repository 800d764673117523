-- Sign-in attempts are also counted per client address (as the server's
-- IP extractor reports it), so one address guessing across many accounts is
-- throttled too. A row is written before the password is checked and
-- deleted when the sign-in succeeds: in-flight attempts count against the
-- budget, which is what makes parallel guesses unable to overrun it.

-- +goose Up
ALTER TABLE console_login_failures ADD COLUMN client_ip text NOT NULL DEFAULT '';

CREATE INDEX console_login_failures_client_ip_idx ON console_login_failures (client_ip, failed_at);

-- +goose Down
DROP INDEX console_login_failures_client_ip_idx;
ALTER TABLE console_login_failures DROP COLUMN client_ip;
