package service

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// PostgreSQL cannot store NUL in text (SQLSTATE 22021) or as \u0000 in
// jsonb (22P05), nor a number past a column's range (22003). Surfaces check
// requests for these once decoded, so the client learns which field is
// wrong; these SQLSTATEs are the backstop for anything that reaches the
// database another way.
const (
	sqlstateBadEncoding    = "22021" // character_not_in_repertoire
	sqlstateUntranslatable = "22P05" // untranslatable_character
	sqlstateOutOfRange     = "22003" // numeric_value_out_of_range
)

// TranslateDBError returns the service's own error for a database error
// that is the request's fault: a value PostgreSQL cannot store is an
// InvalidError (ErrInvalid). Any other error is returned as it is, so
// outages still answer IsUnavailable and faults stay faults. Surfaces pass
// every service error through it once, and no surface reads SQLSTATEs.
func TranslateDBError(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case sqlstateBadEncoding, sqlstateUntranslatable:
		return &InvalidError{Msg: "the request contains a character that cannot be stored (NUL)"}
	case sqlstateOutOfRange:
		return &InvalidError{Msg: "the request contains a number that cannot be stored"}
	}
	return err
}
