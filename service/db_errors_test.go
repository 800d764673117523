package service

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A value PostgreSQL cannot store is the request's fault: the service says
// so with its own error, and leaves every other database error alone.
func TestTranslateDBErrorMakesUnstorableValuesInvalid(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err     error
		invalid bool
		msg     string
	}{
		{fmt.Errorf("service: submit: %w", &pgconn.PgError{Code: "22021"}), true, "the request contains a character that cannot be stored (NUL)"},
		{fmt.Errorf("service: propose: %w", &pgconn.PgError{Code: "22P05"}), true, "the request contains a character that cannot be stored (NUL)"},
		{&pgconn.PgError{Code: "22003"}, true, "the request contains a number that cannot be stored"},
		{&pgconn.PgError{Code: "23505"}, false, ""},
		{&pgconn.PgError{Code: "57P01"}, false, ""},
		{ErrNotFound, false, ""},
	}
	for _, c := range cases {
		got := TranslateDBError(c.err)
		var ie *InvalidError
		if isInvalid := errors.As(got, &ie); isInvalid != c.invalid {
			t.Errorf("%v: invalid = %v, want %v", c.err, isInvalid, c.invalid)
			continue
		}
		if c.invalid && (ie.Msg != c.msg || !errors.Is(got, ErrInvalid)) {
			t.Errorf("%v: %q, want %q as ErrInvalid", c.err, ie.Msg, c.msg)
		}
		if !c.invalid && !errors.Is(got, c.err) {
			t.Errorf("%v: changed to %v", c.err, got)
		}
	}
}
