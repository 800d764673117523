package console

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/web/templates"
)

// Step-up (issue 13, item 2): approving a critical action needs an
// authentication no older than the step-up window, so a session left
// signed in on a shared desk or a lost phone cannot approve one. The card
// says so before the click; the server refuses a stale session's approval
// and sends the human to prove who they are again (the password, or the
// identity provider with prompt=login and max_age), then back to the card.

// stepUpForm is the password re-entry form.
type stepUpForm struct {
	Password string `form:"password"`
	Next     string `form:"next"`
}

// fresh reports whether the session's authentication is recent enough to
// approve a critical action.
func (cn *Console) fresh(cs consoleSession) bool {
	return cn.stepUpWindow == 0 || cn.now().Sub(cs.AuthTime) <= cn.stepUpWindow
}

// needsStepUp reports whether approving a is refused until the human
// re-authenticates: a critical approval by a session older than the window.
func (cn *Console) needsStepUp(c echo.Context, a api.Approval, res engine.ApprovalResolutionType) bool {
	return a.Risk == engine.RiskCritical && res == engine.ResolutionApproveOnce && !cn.fresh(sessionOf(c))
}

// stepUpView is what a critical card says about the step-up to this
// session, before any click.
func (cn *Console) stepUpView(c echo.Context) templates.StepUp {
	if cn.stepUpWindow == 0 {
		return templates.StepUp{}
	}
	return templates.StepUp{Window: minutesText(cn.stepUpWindow), Stale: !cn.fresh(sessionOf(c))}
}

func minutesText(d time.Duration) string {
	if m := int(d / time.Minute); m != 1 {
		return fmt.Sprintf("%d minutes", m)
	}
	return "1 minute"
}

// StepUpShow offers the ways to re-authenticate: the password again (when
// the principal has one and passwords are on), single sign-on with a
// fresh login at the provider (when configured).
func (cn *Console) StepUpShow(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	if cn.stepUpWindow == 0 {
		return redirect(c, next)
	}
	return cn.renderStepUp(c, http.StatusOK, next, "")
}

func (cn *Console) renderStepUp(c echo.Context, status int, next, why string) error {
	page, err := cn.page(c, "", "Confirm it is you")
	if err != nil {
		return err
	}
	p := sessionOf(c).Principal
	m := templates.StepUpPage{
		Page:     page,
		Next:     next,
		Window:   minutesText(cn.stepUpWindow),
		Password: cn.dir.PasswordLogin() && cn.dir.HasPassword(p.ID),
		SSO:      cn.ssoButton(next, true),
		Error:    why,
	}
	return cn.render(c, status, templates.StepUpForm(m))
}

// StepUpSubmit checks the signed-in principal's password again, under the
// same throttle as sign-in, and records the fresh authentication on the
// session before returning to the card.
func (cn *Console) StepUpSubmit(c echo.Context) error {
	var f stepUpForm
	if err := bindForm(c, &f); err != nil {
		return err
	}
	f.Next = safeNext(f.Next)
	cs := sessionOf(c)
	if !cn.dir.PasswordLogin() || !cn.dir.HasPassword(cs.Principal.ID) {
		return httpx.NewError(http.StatusNotFound, httpx.CodeNotFound, "There is no password to re-enter: sign in again with single sign-on.")
	}
	_, refused, err := cn.checkPassword(c, cs.Principal.ID, f.Password)
	if err != nil {
		return err
	}
	if refused != nil {
		return cn.renderStepUp(c, refused.status, f.Next, refused.message)
	}
	if err := cn.store.SteppedUp(c.Request().Context(), cs.ID, cn.now()); err != nil {
		return err
	}
	return redirect(c, f.Next)
}
