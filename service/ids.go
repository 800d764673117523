package service

import (
	"github.com/google/uuid"
)

func newID() string { return uuid.NewString() }

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
