package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/handlers/internal/httpx"
)

// ConsentRecord records consent to one exact action of a session (201).
// A bearer principal that works a run of the session is refused: the
// agent cannot consent to itself.
func (h *Handlers) ConsentRecord(c echo.Context) error {
	var in api.ConsentInput
	if err := httpx.DecodeJSON(c, &in); err != nil {
		return err
	}
	consent, err := h.svc.RecordConsent(c.Request().Context(), principal(c), c.Param("id"), in, false)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, consent)
}

// ConsentList lists a session's consents, newest first.
func (h *Handlers) ConsentList(c echo.Context) error {
	list, err := h.svc.ListConsents(c.Request().Context(), principal(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, api.OwnerConsentList{Items: list})
}
