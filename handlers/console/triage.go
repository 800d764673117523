package console

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/service"
	"gatehouse/web/templates"
)

// Triage (issue 10, part B): what a viewer may do with a card, the queue's
// remembered view, the deny presets, the critical confirmation and the
// batch resolution.

// How close an expiry must be for the card's clock to turn amber (soon)
// and then red (urgent); the queue's "expiring soon" group holds the
// approvals inside expiringWindow. console.js uses the same thresholds.
const (
	expiringWindow = 15 * time.Minute
	urgentWindow   = 5 * time.Minute
	// expiringLimit bounds the group: more than this many expiring at once
	// is what the queue below is for.
	expiringLimit = 10
	// maxBatch bounds one batch resolution: two queue pages.
	maxBatch = 2 * queuePageSize
	// cookieKeyView remembers the queue's view in the console cookie.
	cookieKeyView = "queue_view"
)

// triageCard fills what the viewer may do with the card and how urgent it
// is: the buttons only for a holder of approval.resolve, the run link only
// for a holder of run.read (the routes refuse the others anyway).
func triageCard(c *templates.Card, a api.Approval, viewer engine.Principal, now time.Time) {
	c.AgentID, c.ArgumentsHash = a.AgentID, a.ArgumentsHash
	c.CanResolve = holds(viewer, engine.ScopeApprovalResolve)
	c.CanReadRun = holds(viewer, engine.ScopeRunRead)
	if a.ResolvedAt != nil {
		c.ResolvedAtISO = a.ResolvedAt.UTC().Format(time.RFC3339)
	}
	if a.Status != engine.ApprovalPending {
		return
	}
	switch left := a.ExpiresAt.Sub(now); {
	case left <= urgentWindow:
		c.Urgency = "urgent"
	case left <= expiringWindow:
		c.Urgency = "soon"
	}
}

func holds(p engine.Principal, scope string) bool {
	return len(engine.MissingScopes([]string{scope}, p.Scopes)) == 0
}

// queueView is the queue's view: a ?view= parameter chooses and is
// remembered in the console cookie; otherwise the remembered one, else
// cards.
func (cn *Console) queueView(c echo.Context) (string, error) {
	sess := cn.cookie(c)
	switch v := c.QueryParam("view"); v {
	case "":
		if v, _ := sess.Values[cookieKeyView].(string); v == templates.ViewList {
			return v, nil
		}
		return templates.ViewCards, nil
	case templates.ViewCards, templates.ViewList:
		if sess.Values[cookieKeyView] != v {
			sess.Values[cookieKeyView] = v
			if err := cn.saveCookie(c, sess); err != nil {
				return "", err
			}
		}
		return v, nil
	default:
		return "", httpx.Invalid("view must be cards or list")
	}
}

// denyReason is the reason a resolution records: for a deny, the preset
// (which must be one the panel offers) and the free text, joined; for an
// approval, the free text alone.
func denyReason(res engine.ApprovalResolutionType, preset, text string) (string, error) {
	text = strings.TrimSpace(text)
	if res != engine.ResolutionDeny || preset == "" {
		return text, nil
	}
	if !slices.Contains(templates.DenyPresets, preset) {
		return "", httpx.Invalid("Unknown preset reason.")
	}
	if text == "" {
		return preset, nil
	}
	return preset + ": " + text, nil
}

// needsConfirmation refuses to approve a critical action unless the form's
// confirmation box was ticked: the second, deliberate step is the
// server's rule, not only the page's.
func needsConfirmation(a api.Approval, res engine.ApprovalResolutionType, confirm string) error {
	if a.Risk == engine.RiskCritical && res != engine.ResolutionDeny && confirm != "critical" {
		return httpx.Invalid("Approving a critical action needs its confirmation box ticked.")
	}
	return nil
}

// parseResolution accepts approve_once or deny, the console's two buttons.
func parseResolution(s string) (engine.ApprovalResolutionType, error) {
	res := engine.ApprovalResolutionType(s)
	if res != engine.ResolutionApproveOnce && res != engine.ResolutionDeny {
		return "", httpx.Invalid("Choose approve or deny.")
	}
	return res, nil
}

// batchForm is the queue's batch form: each item is "approval id:arguments
// hash", as the reviewer saw it.
type batchForm struct {
	Items      []string `form:"item"`
	Resolution string   `form:"resolution"`
	Preset     string   `form:"preset"`
}

// ApprovalBatch resolves the selected approvals one by one, each through
// the same guarded resolution as a single card, bound to the arguments
// hash the reviewer saw. Nothing is swept in: a critical approval is
// refused (it needs its own confirmation), and one resolved elsewhere or
// changed meanwhile is reported as it is, item by item.
func (cn *Console) ApprovalBatch(c echo.Context) error {
	var f batchForm
	if err := bindForm(c, &f); err != nil {
		return err
	}
	res, err := parseResolution(f.Resolution)
	if err != nil {
		return err
	}
	reason, err := denyReason(res, f.Preset, "")
	if err != nil {
		return err
	}
	switch {
	case len(f.Items) == 0:
		return httpx.Invalid("Select at least one approval.")
	case len(f.Items) > maxBatch:
		return httpx.Invalid("Select at most 100 approvals at once.")
	}
	p, _ := httpx.PrincipalOf(c)
	ctx := c.Request().Context()
	page, err := cn.page(c, "queue", "Batch decision")
	if err != nil {
		return err
	}
	m := templates.BatchPage{Page: page}
	for _, item := range f.Items {
		id, hash, ok := strings.Cut(item, ":")
		if !ok || !engine.ValidUUID(id) || hash == "" {
			return httpx.Invalid("A selection is malformed; reload the queue.")
		}
		bi, err := cn.batchOne(ctx, p, id, hash, res, reason)
		if err != nil {
			return err
		}
		m.Items = append(m.Items, bi)
	}
	return cn.render(c, http.StatusOK, templates.Batch(m))
}

// batchOne resolves one approval of a batch and says what became of it.
func (cn *Console) batchOne(ctx context.Context, p engine.Principal, id, hash string, res engine.ApprovalResolutionType, reason string) (templates.BatchItem, error) {
	a, err := cn.svc.GetApproval(ctx, p, id)
	if errors.Is(err, service.ErrNotFound) {
		return templates.BatchItem{ID: id, Summary: id, Outcome: "Not found", Kind: "warn"}, nil
	}
	if err != nil {
		return templates.BatchItem{}, err
	}
	item := templates.BatchItem{ID: a.ID, Summary: preview(a.ActionSummary)}
	if a.Risk == engine.RiskCritical && a.Status == engine.ApprovalPending {
		item.Outcome, item.Kind = "Not resolved: a critical action is decided on its own card", "warn"
		return item, nil
	}
	out, err := cn.svc.ResolveApprovalSeen(ctx, p, id, hash, res, reason)
	if err != nil {
		return templates.BatchItem{}, err
	}
	if out.Result == service.ResolveStale {
		item.Outcome, item.Kind = staleOutcome, "warn"
		return item, nil
	}
	if out.Approval.Status == engine.ApprovalPending {
		// A vote toward a quorum: counted, or refused.
		item.Outcome, item.Kind = voteOutcome(out.Approval, p, out.Result)
		return item, nil
	}
	item.Outcome, item.Kind = outcome(out.Approval, p, out.Result)
	item.Applied = out.Result == service.ResolveApplied
	return item, nil
}

// staleOutcome is what a card says when its arguments are no longer the
// ones the reviewer saw.
const staleOutcome = "Not resolved: it changed since you saw it"
