package service

import (
	"github.com/google/uuid"
)

func newID() string { return uuid.NewString() }

// validUUID accepts only the canonical hyphenated form, so an id that is
// not a uuid is answered as not found before it reaches SQL.
func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}

// nullUUID maps "" to SQL NULL.
func nullUUID(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func clampLimit(n, def, max int) int {
	if n <= 0 {
		return def
	}
	return min(n, max)
}
