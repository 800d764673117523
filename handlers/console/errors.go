package console

import (
	"bytes"
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/web/templates"
)

// RenderError answers a console route's error with a page. Under HTMX the
// message goes into the page's alert region instead of replacing the
// element that made the request.
func RenderError(c echo.Context, status int, msg string) error {
	securityHeaders(c.Response().Header())
	c.Response().Header().Set("Cache-Control", "no-store")
	title := http.StatusText(status)
	if title == "" {
		title = "Error"
	}
	page := templates.Page{Title: title, Partial: isHTMX(c)}
	if cs, ok := c.Get(ctxConsoleSession).(consoleSession); ok {
		page.User = displayName(cs.Principal)
		page.CSRF = cs.CSRF
	}
	if page.Partial {
		retarget(c, "#errors", "innerHTML")
	}
	var buf bytes.Buffer
	err := templates.Error(templates.ErrorPage{Page: page, Status: status, Message: msg}).Render(c.Request().Context(), &buf)
	if err != nil {
		return err
	}
	return c.HTMLBlob(status, buf.Bytes())
}
