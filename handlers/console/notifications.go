package console

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/service"
	"gatehouse/web/templates"
)

// notificationsShown is how many deliveries the log lists.
const notificationsShown = 100

// Notifications is the delivery log of the principal's tenant.
func (cn *Console) Notifications(c echo.Context) error {
	page, err := cn.page(c, "notifications", "Notifications")
	if err != nil {
		return err
	}
	p, _ := httpx.PrincipalOf(c)
	list, err := cn.svc.RecentNotifications(c.Request().Context(), p, notificationsShown)
	if err != nil {
		return err
	}
	m := templates.NotificationsPage{Page: page, CanTest: hasScope(c, engine.ScopeApprovalResolve)}
	for name, typ := range cn.svc.NotificationChannels() {
		m.Channels = append(m.Channels, templates.NotificationChannel{Name: name, Type: typ})
	}
	slices.SortFunc(m.Channels, func(a, b templates.NotificationChannel) int { return strings.Compare(a.Name, b.Name) })
	for _, d := range list {
		m.Deliveries = append(m.Deliveries, deliveryView(d))
	}
	return cn.render(c, http.StatusOK, templates.Notifications(m))
}

func deliveryView(d service.NotificationDelivery) templates.NotificationDelivery {
	v := templates.NotificationDelivery{
		Kind: d.Kind, ApprovalID: d.ApprovalID, Channel: d.Channel, Status: d.Status,
		Attempts: d.Attempts, LastError: d.LastError, Created: d.CreatedAt,
	}
	if d.Status == "pending" {
		next := d.NextAttemptAt
		v.NextTry = &next
	}
	for _, t := range d.Tries {
		v.Tries = append(v.Tries, templates.NotificationTry{
			Attempt: t.Attempt, Started: t.StartedAt, HTTPStatus: t.HTTPStatus, Outcome: t.Outcome,
			Error: t.Error, Replica: t.Replica,
			Latency: (time.Duration(t.LatencyMS * float64(time.Millisecond))).Round(time.Millisecond).String(),
		})
	}
	return v
}

type testSendForm struct {
	Channel string `form:"channel"`
}

// NotificationTest queues a test notification to one channel and returns
// to the log, where its delivery shows up.
func (cn *Console) NotificationTest(c echo.Context) error {
	var f testSendForm
	if err := bindForm(c, &f); err != nil {
		return err
	}
	p, _ := httpx.PrincipalOf(c)
	err := cn.svc.SendTestNotification(c.Request().Context(), p, f.Channel)
	if errors.Is(err, service.ErrUnknownChannel) {
		return httpx.Invalid(fmt.Sprintf("There is no channel named %q.", f.Channel))
	}
	if err != nil {
		return err
	}
	if err := cn.flash(c, "ok", "Test notification queued for "+f.Channel+"."); err != nil {
		return err
	}
	return redirect(c, "/notifications")
}
