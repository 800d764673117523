package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"

	"gatehouse/auth"
	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/rules"
	"gatehouse/service"
	"gatehouse/web/templates"
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

// Console holds the console's cookie codec and session store; its methods
// are the console's handlers and middleware.
type Console struct {
	svc        httpx.Service
	dir        *auth.Directory
	policy     *rules.Set
	dev        bool
	now        func() time.Time
	log        *slog.Logger
	cookies    *sessions.CookieStore
	cookieName string
	store      Sessions
	origin     *http.CrossOriginProtection
	// vapidPublic is the Web Push key browsers subscribe with; "" turns
	// subscribing off.
	vapidPublic string
	// oidc signs people in through the identity provider; nil: passwords
	// only.
	oidc *OIDC
	// stepUpWindow is how recent an authentication approving a critical
	// action needs; zero turns the step-up off.
	stepUpWindow time.Duration
	mcpTools     func() []templates.MCPToolRow
	// oidcStarts limits sign-ins started per client address: starting one
	// needs no session and writes a row.
	oidcStarts *httpx.Limiter
}

// Config wires the console; handlers.New fills it from its own Config
// after checking it.
type Config struct {
	Service   httpx.Service
	Sessions  Sessions
	Directory *auth.Directory
	Policy    *rules.Set
	// BaseURL is the console's absolute origin; https makes the cookie
	// Secure and __Host- prefixed.
	BaseURL string
	DevMode bool
	// SessionKeys sign and verify console cookies: the first signs, all
	// verify (rotation).
	SessionKeys [][]byte
	Now         func() time.Time
	Logger      *slog.Logger
	// VAPIDPublicKey is the Web Push public key (base64url) the console
	// hands browsers to subscribe with; "" disables subscribing.
	VAPIDPublicKey string
	// OIDC is single sign-on (NewOIDC); nil: passwords only.
	OIDC *OIDC
	// StepUpWindow is how recent the human's authentication must be to
	// approve a critical action: zero is DefaultStepUpWindow, negative
	// turns the step-up off. Dev mode has no credentials to re-enter and
	// turns it off too.
	StepUpWindow time.Duration
	// MCPTools lists the MCP gateway's upstream tools for the policy page
	// (classified or not, with the upstream's own hints); nil: no gateway.
	MCPTools func() []templates.MCPToolRow
}

// DefaultStepUpWindow is the step-up window when none is configured.
const DefaultStepUpWindow = 10 * time.Minute

// New builds the console's handlers.
func New(cfg Config) *Console {
	// Each key signs; the first signs new cookies and all verify, so keys
	// rotate without signing everyone out. The cookie holds only a random
	// id, so it is signed, not encrypted.
	pairs := make([][]byte, 0, 2*len(cfg.SessionKeys))
	for _, k := range cfg.SessionKeys {
		pairs = append(pairs, k, nil)
	}
	if len(pairs) == 0 {
		// Without configured keys, a per-process key: sessions end on restart.
		pairs = append(pairs, randomBytes(32), nil)
	}
	secure := strings.HasPrefix(cfg.BaseURL, "https://")
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
	window := cfg.StepUpWindow
	switch {
	case window == 0:
		window = DefaultStepUpWindow
	case window < 0 || cfg.DevMode:
		window = 0
	}
	return &Console{
		svc:          cfg.Service,
		dir:          cfg.Directory,
		policy:       cfg.Policy,
		dev:          cfg.DevMode,
		now:          cfg.Now,
		log:          cfg.Logger,
		cookies:      cs,
		cookieName:   name,
		store:        cfg.Sessions,
		origin:       http.NewCrossOriginProtection(),
		vapidPublic:  cfg.VAPIDPublicKey,
		oidc:         cfg.OIDC,
		stepUpWindow: window,
		mcpTools:     cfg.MCPTools,
		oidcStarts:   httpx.NewLimiter(oidcStartLimit, cfg.Now),
	}
}

// Sessions is what the console keeps in the database: its server-side
// sessions and the sign-in throttle. *service.ConsoleSessions satisfies it.
type Sessions interface {
	Create(ctx context.Context, id, tenantID, principalID, csrf string, now, authTime time.Time) error
	SteppedUp(ctx context.Context, id string, authTime time.Time) error
	OIDCLoginStart(ctx context.Context, state string, l service.OIDCLogin, now time.Time) error
	OIDCLoginTake(ctx context.Context, state string, now time.Time) (service.OIDCLogin, bool, error)
	Get(ctx context.Context, id string, now time.Time, touch bool) (service.ConsoleSession, bool, error)
	Delete(ctx context.Context, id string) error
	DeletePrincipal(ctx context.Context, tenantID, principalID string) error
	LoginAttempt(ctx context.Context, account, addr string, now time.Time) (service.LoginVerdict, time.Duration, error)
	LoginReleased(ctx context.Context, account, addr string, now time.Time) error
	LoginSucceeded(ctx context.Context, account, addr string) error
	ThrottleWindow() time.Duration
}

var _ Sessions = (*service.ConsoleSessions)(nil)

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return b
}

func randomToken() string { return base64.RawURLEncoding.EncodeToString(randomBytes(32)) }

// cookie returns the request's console cookie; a cookie that fails
// verification (old key, tampering) yields a fresh empty one.
func (cn *Console) cookie(c echo.Context) *sessions.Session {
	sess, _ := cn.cookies.Get(c.Request(), cn.cookieName)
	return sess
}

func (cn *Console) saveCookie(c echo.Context, sess *sessions.Session) error {
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
	// AuthTime is when the human last proved who they are (step-up).
	AuthTime time.Time
}

// signIn starts a server-side session and points the cookie at it. A
// session the cookie pointed at before ends first: signing in again never
// leaves the old id live (no fixation, no leftovers). authTime is when the
// human proved who they are.
func (cn *Console) signIn(c echo.Context, p engine.Principal, authTime time.Time) (consoleSession, error) {
	ctx := c.Request().Context()
	sess := cn.cookie(c)
	if old, _ := sess.Values[cookieKeySession].(string); old != "" {
		if err := cn.store.Delete(ctx, old); err != nil {
			return consoleSession{}, err
		}
	}
	id, csrf := randomToken(), randomToken()
	now := cn.now()
	authTime = minTime(authTime, now)
	if err := cn.store.Create(ctx, id, p.TenantID, p.ID, csrf, now, authTime); err != nil {
		return consoleSession{}, err
	}
	sess.Values = map[any]any{cookieKeySession: id}
	if err := cn.saveCookie(c, sess); err != nil {
		return consoleSession{}, err
	}
	return consoleSession{ID: id, Principal: p, CSRF: csrf, AuthTime: authTime}, nil
}

// currentSession resolves the cookie to a live session whose principal
// still exists in the directory; touch counts the request as activity
// (the idle timeout starts again).
func (cn *Console) currentSession(c echo.Context, touch bool) (consoleSession, bool, error) {
	id, _ := cn.cookie(c).Values[cookieKeySession].(string)
	if id == "" {
		return consoleSession{}, false, nil
	}
	row, ok, err := cn.store.Get(c.Request().Context(), id, cn.now(), touch)
	if err != nil || !ok {
		return consoleSession{}, false, err
	}
	p, ok := cn.dir.ByID(row.PrincipalID)
	if !ok || p.TenantID != row.TenantID {
		return consoleSession{}, false, nil
	}
	return consoleSession{ID: id, Principal: p, CSRF: row.CSRF, AuthTime: row.AuthTime}, true, nil
}

// RequireSession admits signed-in humans. In dev mode a visitor without a
// session is signed in as the dev principal; otherwise a page view goes to
// the sign-in form and anything else is refused.
func (cn *Console) RequireSession(next echo.HandlerFunc) echo.HandlerFunc {
	return cn.sessionRequired(true, next)
}

// RequireQuietSession is RequireSession for requests a page makes on its
// own, such as the queue's poll every few seconds: they need a live
// session but are no sign of a human at the keyboard, so they do not hold
// off the 30-minute idle timeout.
func (cn *Console) RequireQuietSession(next echo.HandlerFunc) echo.HandlerFunc {
	return cn.sessionRequired(false, next)
}

func (cn *Console) sessionRequired(touch bool, next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		cs, ok, err := cn.currentSession(c, touch)
		if err != nil {
			return err
		}
		if !ok && cn.dev {
			p, found := cn.dir.ByID(auth.DevPrincipalID)
			if found {
				if cs, err = cn.signIn(c, p, cn.now()); err != nil {
					return err
				}
				ok = true
			}
		}
		if !ok {
			if c.Request().Method == http.MethodGet {
				return redirect(c, "/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
			}
			return httpx.NewError(http.StatusUnauthorized, httpx.CodeUnauthenticated, "Your session has ended. Sign in again.")
		}
		httpx.SetPrincipal(c, cs.Principal)
		c.Set(ctxConsoleSession, cs)
		c.Set(ctxConsoleCSRF, cs.CSRF)
		return next(c)
	}
}

// sessionOf returns the request's console session (set by RequireSession).
func sessionOf(c echo.Context) consoleSession {
	cs, _ := c.Get(ctxConsoleSession).(consoleSession)
	return cs
}

// RefuseCrossOrigin refuses cross-origin writes with Go's
// CrossOriginProtection (Sec-Fetch-Site, else Origin against Host), before
// any session is looked at.
func (cn *Console) RefuseCrossOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := cn.origin.Check(c.Request()); err != nil {
			return httpx.NewError(http.StatusForbidden, httpx.CodeForbidden, "Cross-origin request refused.")
		}
		return next(c)
	}
}

// formContentType is the one body a console write accepts: what a plain
// HTML form and htmx send.
const formContentType = "application/x-www-form-urlencoded"

// ReadForm bounds and parses a console write's body before anything reads
// it: urlencoded only (415), 1 MiB at most (413). Parsing here, not in the
// first FormValue call, makes an oversized body a 413 rather than a
// missing form token.
func ReadForm(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			return next(c)
		}
		if ct := r.Header.Get(echo.HeaderContentType); ct != "" || r.ContentLength != 0 {
			if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != formContentType {
				return httpx.NewError(http.StatusUnsupportedMediaType, httpx.CodeUnsupportedMedia, "Forms must be sent as "+formContentType+".")
			}
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, httpx.MaxBody)
		if err := r.ParseForm(); err != nil {
			if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
				return httpx.NewError(http.StatusRequestEntityTooLarge, httpx.CodeTooLarge, "The form is too large.")
			}
			return httpx.Invalid("The form could not be read.")
		}
		return next(c)
	}
}

// RequireFormToken is the second, independent check on writes: htmx's
// header (which a cross-origin page cannot send without a preflight) or the
// form token of the session (or of the sign-in form).
func RequireFormToken(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Header.Get(hxRequest) == "true" {
			return next(c)
		}
		want, _ := c.Get(ctxConsoleCSRF).(string)
		if want == "" || subtle.ConstantTimeCompare([]byte(c.FormValue(formCSRF)), []byte(want)) != 1 {
			return httpx.NewError(http.StatusForbidden, httpx.CodeForbidden, "The form has expired. Reload the page and try again.")
		}
		return next(c)
	}
}

// securityHeaders go on every console response: no inline script or style,
// no framing, no referrer (URLs carry approval ids).
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; worker-src 'self'; manifest-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
}

func WithSecurityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		securityHeaders(c.Response().Header())
		return next(c)
	}
}
