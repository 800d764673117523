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
	Preset     string `form:"preset"`
	Next       string `form:"next"`
	// ArgumentsHash binds the resolution to the arguments the card showed;
	// a form without one (an older page) resolves unbound, as the API does.
	ArgumentsHash string `form:"arguments_hash"`
	// Confirm is "critical" when the critical confirmation box was ticked.
	Confirm string `form:"confirm"`
	// The task grant offer the card showed, repeated by approve_for_task.
	TaskGrantOrigin     string `form:"task_grant_origin"`
	TaskGrantPathPrefix string `form:"task_grant_path_prefix"`
}

// ApprovalResolve approves or denies through the same service method as
// the API. Under HTMX it answers with the card, which swaps in place; a
// conflict (someone else was first, or the arguments changed since the
// card was rendered) is a 409 whose card says so. Without JavaScript it
// redirects back with a flash.
func (cn *Console) ApprovalResolve(c echo.Context) error {
	var f resolveForm
	if err := bindForm(c, &f); err != nil {
		return err
	}
	res := engine.ResolutionApproveForTask
	if f.Resolution != string(res) {
		var err error
		if res, err = parseResolution(f.Resolution); err != nil {
			return err
		}
	}
	reason, err := denyReason(res, f.Preset, f.Reason)
	if err != nil {
		return err
	}
	if len(reason) > service.MaxReasonLength {
		return httpx.Invalid("The reason is too long (500 characters at most).")
	}
	p, _ := httpx.PrincipalOf(c)
	ctx := c.Request().Context()
	a, err := cn.svc.GetApproval(ctx, p, c.Param("id"))
	if err != nil {
		return err
	}
	if err := needsConfirmation(a, res, f.Confirm); err != nil {
		return err
	}
	if cn.needsStepUp(c, a, res) {
		// Nothing is resolved: the human re-authenticates and comes back
		// to the card, which still asks for the decision.
		return redirect(c, templates.StepUpURL(a.ID))
	}
	var out service.ResolveOutcome
	switch {
	case res == engine.ResolutionApproveForTask:
		// The card's own button: the offer it showed, bound to the
		// arguments it showed.
		grant := engine.SiteScope{Origin: f.TaskGrantOrigin, PathPrefix: f.TaskGrantPathPrefix}
		out, err = cn.svc.ResolveApprovalForTask(ctx, p, a.ID, f.ArgumentsHash, &grant, reason)
	case f.ArgumentsHash != "":
		out, err = cn.svc.ResolveApprovalSeen(ctx, p, a.ID, f.ArgumentsHash, res, reason)
	default:
		out, err = cn.svc.ResolveApproval(ctx, p, a.ID, res, reason)
	}
	if err != nil {
		return err
	}
	status := http.StatusOK
	if out.Result == service.ResolveConflict || out.Result == service.ResolveStale {
		status = http.StatusConflict
	}
	card := cardView(out.Approval, p, cn.now(), out.Result)
	if out.Result == service.ResolveStale {
		card.Outcome, card.OutcomeKind = staleOutcome, "warn"
	}
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
	card.CSRF, card.Back, card.StepUp = sessionOf(c).CSRF, safeNext(f.Next), cn.stepUpView(c)
	return cn.render(c, status, templates.CardView(card))
}
