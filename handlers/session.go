package handlers

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"

	"gatehouse/auth"
	"gatehouse/engine"
	"gatehouse/service"
)

// The console cookie holds a random session id (or, before sign-in, the
// login form's token) and nothing else; the server-side row behind the id is
// the session. Under TLS the __Host- prefix pins it to this origin.
const (
	cookieName    = "gh_session"
	cookieNameTLS = "__Host-gh_session"

	cookieKeySession = "sid"
	cookieKeyLogin   = "login_csrf"
	formCSRF         = "_csrf"

	ctxConsoleCSRF    = "gatehouse.console_csrf"
	ctxConsoleSession = "gatehouse.console_session"
)

// console holds the console's cookie codec and session store; its methods
// are the console's handlers and middleware.
type console struct {
	s          *Server
	cookies    *sessions.CookieStore
	cookieName string
	store      Sessions
	origin     *http.CrossOriginProtection
}

func newConsole(s *Server) *console {
	// Each key signs; the first signs new cookies and all verify, so keys
	// rotate without signing everyone out. The cookie holds only a random
	// id, so it is signed, not encrypted.
	pairs := make([][]byte, 0, 2*len(s.cfg.SessionKeys))
	for _, k := range s.cfg.SessionKeys {
		pairs = append(pairs, k, nil)
	}
	if len(pairs) == 0 {
		// Without configured keys, a per-process key: sessions end on restart.
		pairs = append(pairs, randomBytes(32), nil)
	}
	secure := strings.HasPrefix(s.cfg.BaseURL, "https://")
	cs := sessions.NewCookieStore(pairs...)
	cs.Options = &sessions.Options{
		Path:     "/",
		MaxAge:   int(service.SessionAbsolute.Seconds()),
		HttpOnly: true,
		Secure:   secure,
		SameSite: http.SameSiteLaxMode,
	}
	name := cookieName
	if secure {
		name = cookieNameTLS
	}
	return &console{
		s:          s,
		cookies:    cs,
		cookieName: name,
		store:      s.cfg.Sessions,
		origin:     http.NewCrossOriginProtection(),
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return b
}

func randomToken() string { return base64.RawURLEncoding.EncodeToString(randomBytes(32)) }

// cookie returns the request's console cookie; a cookie that fails
// verification (old key, tampering) yields a fresh empty one.
func (cn *console) cookie(c echo.Context) *sessions.Session {
	sess, _ := cn.cookies.Get(c.Request(), cn.cookieName)
	return sess
}

func (cn *console) saveCookie(c echo.Context, sess *sessions.Session) error {
	if err := sess.Save(c.Request(), c.Response()); err != nil {
		return fmt.Errorf("console cookie: %w", err)
	}
	return nil
}

// consoleSession is the signed-in human of a console request.
type consoleSession struct {
	ID        string
	Principal engine.Principal
	CSRF      string
}

// signIn starts a server-side session and points the cookie at it. A
// session the cookie pointed at before ends first: signing in again never
// leaves the old id live (no fixation, no leftovers).
func (cn *console) signIn(c echo.Context, p engine.Principal) (consoleSession, error) {
	ctx := c.Request().Context()
	sess := cn.cookie(c)
	if old, _ := sess.Values[cookieKeySession].(string); old != "" {
		if err := cn.store.Delete(ctx, old); err != nil {
			return consoleSession{}, err
		}
	}
	id, csrf := randomToken(), randomToken()
	if err := cn.store.Create(ctx, id, p.TenantID, p.ID, csrf, cn.s.now()); err != nil {
		return consoleSession{}, err
	}
	sess.Values = map[any]any{cookieKeySession: id}
	if err := cn.saveCookie(c, sess); err != nil {
		return consoleSession{}, err
	}
	return consoleSession{ID: id, Principal: p, CSRF: csrf}, nil
}

// currentSession resolves the cookie to a live session whose principal
// still exists in the directory; touch counts the request as activity
// (the idle timeout starts again).
func (cn *console) currentSession(c echo.Context, touch bool) (consoleSession, bool, error) {
	id, _ := cn.cookie(c).Values[cookieKeySession].(string)
	if id == "" {
		return consoleSession{}, false, nil
	}
	row, ok, err := cn.store.Get(c.Request().Context(), id, cn.s.now(), touch)
	if err != nil || !ok {
		return consoleSession{}, false, err
	}
	p, ok := cn.s.cfg.Directory.ByID(row.PrincipalID)
	if !ok || p.TenantID != row.TenantID {
		return consoleSession{}, false, nil
	}
	return consoleSession{ID: id, Principal: p, CSRF: row.CSRF}, true, nil
}

// requireSession admits signed-in humans. In dev mode a visitor without a
// session is signed in as the dev principal; otherwise a page view goes to
// the sign-in form and anything else is refused.
func (cn *console) requireSession(next echo.HandlerFunc) echo.HandlerFunc {
	return cn.sessionRequired(true, next)
}

// requireQuietSession is requireSession for requests a page makes on its
// own, such as the queue's poll every few seconds: they need a live
// session but are no sign of a human at the keyboard, so they do not hold
// off the 30-minute idle timeout.
func (cn *console) requireQuietSession(next echo.HandlerFunc) echo.HandlerFunc {
	return cn.sessionRequired(false, next)
}

func (cn *console) sessionRequired(touch bool, next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		cs, ok, err := cn.currentSession(c, touch)
		if err != nil {
			return err
		}
		if !ok && cn.s.cfg.DevMode {
			p, found := cn.s.cfg.Directory.ByID(auth.DevPrincipalID)
			if found {
				if cs, err = cn.signIn(c, p); err != nil {
					return err
				}
				ok = true
			}
		}
		if !ok {
			if c.Request().Method == http.MethodGet {
				return redirect(c, "/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
			}
			return newError(http.StatusUnauthorized, codeUnauthenticated, "Your session has ended. Sign in again.")
		}
		setPrincipal(c, cs.Principal)
		c.Set(ctxConsoleSession, cs)
		c.Set(ctxConsoleCSRF, cs.CSRF)
		return next(c)
	}
}

// sessionOf returns the request's console session (set by requireSession).
func sessionOf(c echo.Context) consoleSession {
	cs, _ := c.Get(ctxConsoleSession).(consoleSession)
	return cs
}

// refuseCrossOrigin refuses cross-origin writes with Go's
// CrossOriginProtection (Sec-Fetch-Site, else Origin against Host), before
// any session is looked at.
func (cn *console) refuseCrossOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := cn.origin.Check(c.Request()); err != nil {
			return newError(http.StatusForbidden, codeForbidden, "Cross-origin request refused.")
		}
		return next(c)
	}
}

// formContentType is the one body a console write accepts: what a plain
// HTML form and htmx send.
const formContentType = "application/x-www-form-urlencoded"

// readForm bounds and parses a console write's body before anything reads
// it: urlencoded only (415), 1 MiB at most (413). Parsing here, not in the
// first FormValue call, makes an oversized body a 413 rather than a
// missing form token.
func readForm(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			return next(c)
		}
		if ct := r.Header.Get(echo.HeaderContentType); ct != "" || r.ContentLength != 0 {
			if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != formContentType {
				return newError(http.StatusUnsupportedMediaType, codeUnsupportedMedia, "Forms must be sent as "+formContentType+".")
			}
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, maxBody)
		if err := r.ParseForm(); err != nil {
			if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
				return newError(http.StatusRequestEntityTooLarge, codeTooLarge, "The form is too large.")
			}
			return invalid("The form could not be read.")
		}
		return next(c)
	}
}

// requireFormToken is the second, independent check on writes: htmx's
// header (which a cross-origin page cannot send without a preflight) or the
// form token of the session (or of the sign-in form).
func requireFormToken(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Header.Get(hxRequest) == "true" {
			return next(c)
		}
		want, _ := c.Get(ctxConsoleCSRF).(string)
		if want == "" || subtle.ConstantTimeCompare([]byte(c.FormValue(formCSRF)), []byte(want)) != 1 {
			return newError(http.StatusForbidden, codeForbidden, "The form has expired. Reload the page and try again.")
		}
		return next(c)
	}
}

// securityHeaders go on every console response: no inline script or style,
// no framing, no referrer (URLs carry approval ids).
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
}

func withSecurityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		securityHeaders(c.Response().Header())
		return next(c)
	}
}
