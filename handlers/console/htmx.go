package console

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// HTMX request and response headers the console reads and writes.
const (
	hxRequest  = "HX-Request"
	hxBoosted  = "HX-Boosted"
	hxRedirect = "HX-Redirect"
	hxRetarget = "HX-Retarget"
	hxReswap   = "HX-Reswap"
)

// isHTMX reports whether htmx sent the request for a partial swap (a
// boosted request wants the whole page).
func isHTMX(c echo.Context) bool {
	h := c.Request().Header
	return h.Get(hxRequest) == "true" && h.Get(hxBoosted) != "true"
}

// redirect sends the browser to path: a 303 for a plain form post, an
// HX-Redirect for htmx, which would otherwise swap the target page into
// the element that made the request.
func redirect(c echo.Context, path string) error {
	if isHTMX(c) {
		c.Response().Header().Set(hxRedirect, path)
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, path)
}

// retarget makes htmx swap the response into another element than the one
// the request named, e.g. an error message into the page's alert region.
func retarget(c echo.Context, selector, swap string) {
	c.Response().Header().Set(hxRetarget, selector)
	c.Response().Header().Set(hxReswap, swap)
}
