package console

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/service"
	"gatehouse/web/templates"
)

// resolveForm is the approve/deny form of a card.
type resolveForm struct {
	Resolution string `form:"resolution"`
	Reason     string `form:"reason"`
	Next       string `form:"next"`
}

// ApprovalResolve approves or denies through the same service method as
// the API. Under HTMX it answers with the card, which swaps in place; a
// conflict (someone else was first) is a 409 whose card says who and how.
// Without JavaScript it redirects back with a flash.
func (cn *Console) ApprovalResolve(c echo.Context) error {
	var f resolveForm
	if err := bindForm(c, &f); err != nil {
		return err
	}
	res := engine.ApprovalResolutionType(f.Resolution)
	if res != engine.ResolutionApproveOnce && res != engine.ResolutionDeny {
		return httpx.Invalid("Choose approve or deny.")
	}
	if len(f.Reason) > service.MaxReasonLength {
		return httpx.Invalid("The reason is too long (500 characters at most).")
	}
	p, _ := httpx.PrincipalOf(c)
	ctx := c.Request().Context()
	out, err := cn.svc.ResolveApproval(ctx, p, c.Param("id"), res, f.Reason)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if out.Result == service.ResolveConflict {
		status = http.StatusConflict
	}
	card := cardView(out.Approval, p, cn.now(), out.Result)
	if !isHTMX(c) {
		kind := "ok"
		if status == http.StatusConflict {
			kind = "warn"
		}
		if err := cn.flash(c, kind, card.Outcome+": "+templates.VisibleText(preview(out.Approval.ActionSummary))); err != nil {
			return err
		}
		return redirect(c, safeNext(f.Next))
	}
	card.CSRF = sessionOf(c).CSRF
	return cn.render(c, status, templates.CardView(card))
}
