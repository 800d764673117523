package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"gatehouse/auth"
	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/service"
	"gatehouse/web/templates"
)

// loginForm is the sign-in form.
type loginForm struct {
	ID       string `form:"id"`
	Password string `form:"password"`
	Next     string `form:"next"`
}

// loginSlotWait is how long a sign-in waits for a password verification
// slot (one per core) before the server answers 503: a burst of sign-ins
// queues briefly, a flood is turned away instead of piling up.
const loginSlotWait = time.Second

// maxAccountLen bounds the throttle key: an id longer than any real one
// still counts against one row key, not an unbounded string.
const maxAccountLen = 128

// LoginToken gives the sign-in form its token before there is a session:
// a random value in the signed cookie that the form must echo.
func (cn *Console) LoginToken(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if tok, _ := cn.cookie(c).Values[cookieKeyLogin].(string); tok != "" {
			c.Set(ctxConsoleCSRF, tok)
		}
		return next(c)
	}
}

// LoginShow renders the sign-in form, or sends a signed-in human on.
func (cn *Console) LoginShow(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	if _, ok, err := cn.currentSession(c, true); err != nil {
		return err
	} else if ok || cn.dev {
		return redirect(c, next)
	}
	tok, err := cn.ensureLoginToken(c)
	if err != nil {
		return err
	}
	return cn.renderLogin(c, http.StatusOK, templates.LoginPage{Next: next}, tok)
}

func (cn *Console) ensureLoginToken(c echo.Context) (string, error) {
	sess := cn.cookie(c)
	tok, _ := sess.Values[cookieKeyLogin].(string)
	if tok == "" {
		tok = randomToken()
		sess.Values[cookieKeyLogin] = tok
		if err := cn.saveCookie(c, sess); err != nil {
			return "", err
		}
	}
	return tok, nil
}

func (cn *Console) renderLogin(c echo.Context, status int, m templates.LoginPage, tok string) error {
	m.Page = templates.Page{Title: "Sign in", CSRF: tok}
	m.PasswordLogin, m.SSO = cn.dir.PasswordLogin(), cn.ssoButton(m.Next, false)
	return cn.render(c, status, templates.Login(m))
}

// LoginSubmit checks the password (checkPassword) and signs the human in.
func (cn *Console) LoginSubmit(c echo.Context) error {
	var f loginForm
	if err := bindForm(c, &f); err != nil {
		return err
	}
	if !cn.dir.PasswordLogin() {
		return httpx.NewError(http.StatusNotFound, httpx.CodeNotFound, "Password sign-in is turned off: sign in with single sign-on.")
	}
	tok, _ := c.Get(ctxConsoleCSRF).(string)
	f.Next = safeNext(f.Next)
	form := templates.LoginPage{UserID: f.ID, Next: f.Next}
	p, refused, err := cn.checkPassword(c, f.ID, f.Password)
	if err != nil {
		return err
	}
	if refused != nil {
		form.Error = refused.message
		return cn.renderLogin(c, refused.status, form, tok)
	}
	if _, err := cn.signIn(c, p, cn.now()); err != nil {
		return err
	}
	cn.log.InfoContext(c.Request().Context(), "console sign-in", "request_id", httpx.RequestID(c), "principal", p.ID, "tenant", p.TenantID, "method", "password")
	return redirect(c, f.Next)
}

// passwordRefusal is why a password attempt did not sign anyone in, as
// the form shows it.
type passwordRefusal struct {
	status  int
	message string
}

// checkPassword verifies id's password (argon2id in the directory) under
// the failure budgets of service.LoginThrottle, kept in PostgreSQL. The
// attempt is recorded before the password is checked, so parallel
// guesses cannot all pass one budget check. Sign-in and the step-up's
// password re-entry share it, and so share the budgets.
func (cn *Console) checkPassword(c echo.Context, id, password string) (engine.Principal, *passwordRefusal, error) {
	account := strings.ToLower(strings.TrimSpace(id))
	if len(account) > maxAccountLen {
		account = account[:maxAccountLen]
	}
	ctx := c.Request().Context()
	addr, now := c.RealIP(), cn.now()
	verdict, wait, err := cn.store.LoginAttempt(ctx, account, addr, now)
	if err != nil {
		return engine.Principal{}, nil, err
	}
	minutes := int(cn.store.ThrottleWindow() / time.Minute)
	switch verdict {
	case service.LoginPairThrottled:
		return engine.Principal{}, &passwordRefusal{http.StatusTooManyRequests,
			fmt.Sprintf("Too many failed sign-ins for this account from your network. Try again in %d minutes.", minutes)}, nil
	case service.LoginAddressThrottled:
		return engine.Principal{}, &passwordRefusal{http.StatusTooManyRequests,
			fmt.Sprintf("Too many failed sign-ins from your network. Try again in %d minutes.", minutes)}, nil
	case service.LoginBackoff:
		secs := int((wait + time.Second - 1) / time.Second)
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		return engine.Principal{}, &passwordRefusal{http.StatusTooManyRequests,
			fmt.Sprintf("Too many sign-in attempts in a row. Wait %d seconds before trying again.", secs)}, nil
	}
	slotCtx, cancel := context.WithTimeout(ctx, loginSlotWait)
	p, ok, err := cn.dir.Login(slotCtx, strings.TrimSpace(id), password)
	cancel()
	if errors.Is(err, auth.ErrBusy) {
		if err := cn.store.LoginReleased(ctx, account, addr, now); err != nil {
			return engine.Principal{}, nil, err
		}
		c.Response().Header().Set("Retry-After", "1")
		return engine.Principal{}, &passwordRefusal{http.StatusServiceUnavailable, "The server is busy signing people in. Try again in a moment."}, nil
	}
	if err != nil {
		return engine.Principal{}, nil, fmt.Errorf("console sign-in: %w", err)
	}
	if !ok {
		return engine.Principal{}, &passwordRefusal{http.StatusUnauthorized, "Wrong user or password."}, nil
	}
	if err := cn.store.LoginSucceeded(ctx, account, addr); err != nil {
		return engine.Principal{}, nil, err
	}
	return p, nil, nil
}

// Logout ends this session: the row goes, so the old cookie is worthless
// even if it was copied.
func (cn *Console) Logout(c echo.Context) error {
	if err := cn.store.Delete(c.Request().Context(), sessionOf(c).ID); err != nil {
		return err
	}
	return cn.clearCookie(c)
}

// LogoutEverywhere ends every session of the signed-in principal.
func (cn *Console) LogoutEverywhere(c echo.Context) error {
	p := sessionOf(c).Principal
	if err := cn.store.DeletePrincipal(c.Request().Context(), p.TenantID, p.ID); err != nil {
		return err
	}
	return cn.clearCookie(c)
}

func (cn *Console) clearCookie(c echo.Context) error {
	sess := cn.cookie(c)
	sess.Values = map[any]any{}
	sess.Options.MaxAge = -1
	if err := cn.saveCookie(c, sess); err != nil {
		return err
	}
	return redirect(c, "/login")
}

// safeNext keeps a post-sign-in (or post-resolve) redirect on this site:
// a path with no scheme or host that starts with exactly one slash. Any
// backslash or control character refuses it, because browsers drop tabs
// and newlines from URLs and read a backslash as a slash: "/<TAB>/evil.example"
// and "/\evil.example" both become "//evil.example", another origin.
func safeNext(next string) string {
	if next == "" || strings.ContainsFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		!strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return "/"
	}
	return next
}
