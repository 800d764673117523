// Package console serves the approval console: server-rendered pages
// (templ and HTMX), sign-in, cookie sessions, CSRF and origin checks. The
// routes that reach these handlers are listed in handlers/routes.go.
package console

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/web/templates"
)

const (
	// queuePageSize is one page of the queue: keyset pagination keeps the
	// cost of a page the same at any queue length.
	queuePageSize = 50
	// flashSep joins a flash's kind and text in the cookie.
	flashSep = "\x00"
)

// render writes a component as the whole answer. It renders into a buffer
// first so a template error becomes an error page, not half a page.
func (cn *Console) render(c echo.Context, status int, comp templ.Component) error {
	buf := renderBuffers.Get().(*bytes.Buffer)
	defer releaseRenderBuffer(buf)
	if err := comp.Render(c.Request().Context(), buf); err != nil {
		return err
	}
	securityHeaders(c.Response().Header())
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.HTMLBlob(status, buf.Bytes())
}

// renderBuffers are pooled: a queue page is about a hundred kilobytes, and
// growing a fresh buffer to that size was most of a page's allocation.
var renderBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledRender keeps an unusually large page's buffer out of the pool.
const maxPooledRender = 1 << 20

func releaseRenderBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledRender {
		return
	}
	b.Reset()
	renderBuffers.Put(b)
}

// page is the chrome of a console page for the signed-in human; it takes
// the pending flash message from the cookie.
func (cn *Console) page(c echo.Context, nav, title string) (templates.Page, error) {
	cs := sessionOf(c)
	p := templates.Page{
		Title:   title,
		User:    displayName(cs.Principal),
		CSRF:    cs.CSRF,
		Nav:     nav,
		Partial: isHTMX(c),
	}
	sess := cn.cookie(c)
	if flashes := sess.Flashes(); len(flashes) > 0 {
		if f, ok := flashes[0].(string); ok {
			kind, text, _ := strings.Cut(f, flashSep)
			p.Flash = templates.Flash{Kind: kind, Text: text}
		}
		if err := cn.saveCookie(c, sess); err != nil {
			return p, err
		}
	}
	return p, nil
}

// flash leaves a message for the next page view (a redirect after a form
// post without JavaScript).
func (cn *Console) flash(c echo.Context, kind, text string) error {
	sess := cn.cookie(c)
	sess.AddFlash(kind + flashSep + text)
	return cn.saveCookie(c, sess)
}

func displayName(p engine.Principal) string {
	if p.DisplayName != "" {
		return p.DisplayName
	}
	return p.ID
}

// RequireScope refuses a signed-in human who lacks the route's
// scope with a 403 page naming it: the console's twin of api.RequireScope, on
// the route table as /v1's checks are, so no handler repeats the check.
func RequireScope(scope string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !hasScope(c, scope) {
				return httpx.NewError(http.StatusForbidden, httpx.CodeMissingScope, "You need the "+scope+" scope to see this.")
			}
			return next(c)
		}
	}
}

// hasScope reports whether the request's principal holds scope.
func hasScope(c echo.Context, scope string) bool {
	p, _ := httpx.PrincipalOf(c)
	return len(engine.MissingScopes([]string{scope}, p.Scopes)) == 0
}

// bindForm reads a console form into f (a struct with form tags) and, as
// the API does, refuses a NUL character or invalid UTF-8 in any field.
func bindForm(c echo.Context, f any) error {
	if err := c.Bind(f); err != nil {
		return httpx.Invalid("The form could not be read.")
	}
	if field, ok := httpx.InvalidUTF8Field(f, "form"); ok {
		return httpx.Invalid(fmt.Sprintf("The field %q is not valid UTF-8.", field))
	}
	return httpx.RefuseNUL(f, "form")
}
