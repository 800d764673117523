// Package handlers serves the JSON API (/v1) and the console pages over the
// same service methods.
package handlers

// Server holds what every handler needs. Placeholder: filled in by the API work.
type Server struct{}
