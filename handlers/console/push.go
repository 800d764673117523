package console

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/service"
	"gatehouse/web/templates"
)

const (
	// headerCSRF carries the session's form token on the console's JSON
	// writes, which have no form field to put it in.
	headerCSRF = "X-CSRF-Token"
	// maxPushBody bounds a subscription body: an endpoint of at most 2 KiB
	// and two short keys fit many times over.
	maxPushBody = 8 << 10
	jsonType    = "application/json"
)

// pushSubscriptionBody is PushSubscription.toJSON() as the browser
// produces it. expirationTime is accepted and not used: push services
// that expire subscriptions answer 410, and the sender drops the row then.
type pushSubscriptionBody struct {
	Endpoint       string   `json:"endpoint"`
	ExpirationTime *float64 `json:"expirationTime"`
	Keys           struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}

// pushUnsubscribeBody names the endpoint to forget.
type pushUnsubscribeBody struct {
	Endpoint string `json:"endpoint"`
}

// RequireJSONToken guards the console's JSON writes as RequireFormToken
// guards its forms: the body must be JSON (a content type a cross-origin
// form cannot send) and the X-CSRF-Token header must hold the session's
// form token. It runs after RequireSession.
func RequireJSONToken(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if mt, _, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType)); err != nil || mt != jsonType {
			return httpx.NewError(http.StatusUnsupportedMediaType, httpx.CodeUnsupportedMedia, "The body must be sent as "+jsonType+".")
		}
		want, _ := c.Get(ctxConsoleCSRF).(string)
		if want == "" || subtle.ConstantTimeCompare([]byte(r.Header.Get(headerCSRF)), []byte(want)) != 1 {
			return httpx.NewError(http.StatusForbidden, httpx.CodeForbidden, "The page has expired. Reload it and try again.")
		}
		return next(c)
	}
}

// decodePushBody reads a small JSON body strictly into v.
func decodePushBody(c echo.Context, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxPushBody))
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return httpx.NewError(http.StatusRequestEntityTooLarge, httpx.CodeTooLarge, fmt.Sprintf("the body exceeds %d bytes", maxPushBody))
	}
	if err != nil {
		return httpx.Invalid("the body could not be read")
	}
	return httpx.DecodeBody(body, v)
}

// PushSettings is "Notifications on this device": the switch for this
// browser and the list of the human's subscribed devices.
func (cn *Console) PushSettings(c echo.Context) error {
	p, _ := httpx.PrincipalOf(c)
	page, err := cn.page(c, "notifications", "Notifications")
	if err != nil {
		return err
	}
	m := templates.PushSettingsPage{Page: page, CanSubscribe: hasScope(c, engine.ScopeApprovalResolve), VAPIDKey: cn.vapidPublic}
	rows, err := cn.svc.PushSubscriptions(c.Request().Context(), p.TenantID)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.PrincipalID != p.ID {
			continue
		}
		d := templates.PushDevice{Label: r.UserAgent, Since: dateTime(r.CreatedAt)}
		if d.Label == "" {
			d.Label = "Unnamed browser"
		}
		if r.LastSuccessAt != nil {
			d.Last = dateTime(*r.LastSuccessAt)
		}
		m.Devices = append(m.Devices, d)
	}
	return cn.render(c, http.StatusOK, templates.PushSettings(m))
}

// PushSubscribe stores this browser's push subscription for the signed-in
// approver (the route asks for approval.resolve: a notification is a call
// to act). 204 on success, 400 with the reason for a subscription the
// server could not push to.
func (cn *Console) PushSubscribe(c echo.Context) error {
	if cn.vapidPublic == "" {
		return httpx.NewError(http.StatusServiceUnavailable, httpx.CodeUnavailable, "Web Push is not configured on this server.")
	}
	var body pushSubscriptionBody
	if err := decodePushBody(c, &body); err != nil {
		return err
	}
	p, _ := httpx.PrincipalOf(c)
	err := cn.svc.SubscribePush(c.Request().Context(), p.TenantID, p.ID, service.PushSubscriptionInput{
		Endpoint:  body.Endpoint,
		P256dh:    body.Keys.P256dh,
		Auth:      body.Keys.Auth,
		UserAgent: c.Request().UserAgent(),
	})
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// PushUnsubscribe forgets one of the signed-in human's subscriptions by
// endpoint. It needs no scope, so someone who lost approval.resolve can
// still switch a device off; an endpoint that is not theirs changes
// nothing. Always 204 for a well-formed body.
func (cn *Console) PushUnsubscribe(c echo.Context) error {
	var body pushUnsubscribeBody
	if err := decodePushBody(c, &body); err != nil {
		return err
	}
	if body.Endpoint == "" {
		return httpx.Invalid("endpoint is required")
	}
	p, _ := httpx.PrincipalOf(c)
	if err := cn.svc.UnsubscribePush(c.Request().Context(), p.TenantID, p.ID, body.Endpoint); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
