package console

import (
	"fmt"
	"time"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/web/templates"
)

// notCoveredText is why a session's browser task grant did not cover an
// action, in words.
var notCoveredText = map[string]string{
	engine.GrantNotCoveredOrigin:    "This session's task grant does not cover this site.",
	engine.GrantNotCoveredPrefix:    "This session's task grant covers another part of this site.",
	engine.GrantNotCoveredExpired:   "This session's task grant has expired.",
	engine.GrantNotCoveredExhausted: "This session's task grant has used all its actions.",
}

// taskGrantCard is what a card shows about task grants to viewer.
func taskGrantCard(a api.Approval, viewer engine.Principal) templates.TaskGrantCard {
	g := templates.TaskGrantCard{
		CanGrant:   holds(viewer, engine.ScopeGrantWrite),
		GrantID:    a.TaskGrantID,
		NotCovered: notCoveredText[a.TaskGrantNotCovered],
	}
	if o := a.TaskGrantOffer; o != nil && a.Status == engine.ApprovalPending {
		g.Offer = &templates.TaskGrantOffer{
			Origin: o.Origin, PathPrefix: o.PathPrefix, Minutes: o.DurationSeconds / 60, Budget: o.ActionBudget,
		}
	}
	return g
}

// grantRows are a session's grants for the run page.
func grantRows(gs []api.BrowserTaskGrant) []templates.GrantRow {
	out := make([]templates.GrantRow, 0, len(gs))
	for _, g := range gs {
		r := templates.GrantRow{
			ID: g.ID, Scope: g.Origin + g.PathPrefix, Status: g.Status,
			Uses: g.Uses, Budget: g.Budget, UsesLeft: g.UsesLeft,
		}
		if g.Status == api.GrantActive {
			r.TimeLeft = (time.Duration(g.SecondsLeft) * time.Second).String()
		}
		out = append(out, r)
	}
	return out
}

// GrantRevoke revokes a browser task grant from its run's page, through
// the same service method as POST /v1/browser-grants/{id}/revoke
// (browser.grant.write), and returns to the page it came from. Without
// JavaScript it is a plain form post and a redirect.
func (cn *Console) GrantRevoke(c echo.Context) error {
	var f struct {
		Next string `form:"next"`
	}
	if err := bindForm(c, &f); err != nil {
		return err
	}
	p, _ := httpx.PrincipalOf(c)
	g, err := cn.svc.RevokeTaskGrant(c.Request().Context(), p, c.Param("id"))
	if err != nil {
		return err
	}
	if err := cn.flash(c, "ok", fmt.Sprintf("Task grant for %s revoked after %d of %d actions.", templates.VisibleText(g.Origin+g.PathPrefix), g.Uses, g.Budget)); err != nil {
		return err
	}
	return redirect(c, safeNext(f.Next))
}

// sessionGrants is the run page's grant list for a viewer that may read
// grants; show is false for one that may not.
func (cn *Console) sessionGrants(c echo.Context, sessionID string) (rows []templates.GrantRow, show bool, err error) {
	if !hasScope(c, engine.ScopeGrantRead) {
		return nil, false, nil
	}
	p, _ := httpx.PrincipalOf(c)
	gs, err := cn.svc.ListTaskGrants(c.Request().Context(), p, sessionID)
	if err != nil {
		return nil, false, err
	}
	return grantRows(gs), true, nil
}
