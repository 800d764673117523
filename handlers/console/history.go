package console

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
	"gatehouse/service"
	"gatehouse/web/templates"
)

const dateLayout = "2006-01-02"

// maxSearchLen bounds the history's text search.
const maxSearchLen = 200

// History lists resolved approvals, newest first, filtered by text,
// status, resolver, risk, tool, agent and date (a plain GET form; the
// "older" link is a keyset cursor, the export links carry the filter).
func (cn *Console) History(c echo.Context) error {
	fm := historyForm(c.QueryParams())
	f, err := historyFilter(fm)
	if err != nil {
		return err
	}
	f.Cursor = c.QueryParam("cursor")
	p, _ := httpx.PrincipalOf(c)
	list, err := cn.svc.ListApprovals(c.Request().Context(), p, f)
	if err != nil {
		return err
	}
	page, err := cn.page(c, "history", "History")
	if err != nil {
		return err
	}
	query := historyQuery(fm)
	m := templates.HistoryPage{Page: page, Filter: fm, Query: query.Encode()}
	now := cn.now()
	for _, a := range list.Items {
		m.Rows = append(m.Rows, cardView(a, p, now, ""))
	}
	if list.NextCursor != "" {
		query.Set("cursor", list.NextCursor)
		m.MoreURL = "/history?" + query.Encode()
	}
	return cn.render(c, http.StatusOK, templates.History(m))
}

// historyForm reads the history's filter from a query string.
func historyForm(q url.Values) templates.HistoryFilter {
	return templates.HistoryFilter{
		Status:     q.Get("status"),
		ResolvedBy: q.Get("resolver"),
		Risk:       q.Get("risk"),
		Since:      q.Get("since"),
		Until:      q.Get("until"),
		Text:       strings.TrimSpace(q.Get("q")),
		Tool:       q.Get("tool"),
		Agent:      q.Get("agent"),
	}
}

// historyQuery is the filter as query parameters, empty ones left out.
func historyQuery(fm templates.HistoryFilter) url.Values {
	q := url.Values{}
	for k, v := range map[string]string{
		"status": fm.Status, "resolver": fm.ResolvedBy, "risk": fm.Risk, "since": fm.Since,
		"until": fm.Until, "q": fm.Text, "tool": fm.Tool, "agent": fm.Agent,
	} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// historyFilter turns the form into a service filter; an unknown status or
// risk, or a malformed date, is a 400 naming the field.
func historyFilter(fm templates.HistoryFilter) (service.ApprovalFilter, error) {
	f := service.ApprovalFilter{
		Status: service.StatusResolved, ResolvedBy: fm.ResolvedBy, Limit: queuePageSize,
		Text: fm.Text, Tool: fm.Tool, AgentID: fm.Agent,
	}
	if len(fm.Text) > maxSearchLen || len(fm.Tool) > maxSearchLen || len(fm.Agent) > maxSearchLen {
		return f, httpx.Invalid("A search term is too long (200 characters at most).")
	}
	if fm.Status != "" {
		st := engine.ApprovalStatus(fm.Status)
		if !st.Valid() || st == engine.ApprovalPending {
			return f, httpx.Invalid("Unknown status.")
		}
		f.Status = st
	}
	if fm.Risk != "" {
		r := engine.RiskLevel(fm.Risk)
		if !r.Valid() {
			return f, httpx.Invalid("Unknown risk.")
		}
		f.Risk = r
	}
	if fm.Since != "" {
		t, err := time.Parse(dateLayout, fm.Since)
		if err != nil {
			return f, httpx.Invalid("The From date must look like 2026-01-31.")
		}
		f.Since = &t
	}
	if fm.Until != "" {
		t, err := time.Parse(dateLayout, fm.Until)
		if err != nil {
			return f, httpx.Invalid("The To date must look like 2026-01-31.")
		}
		// The To day is included: the bound is the next midnight.
		t = t.AddDate(0, 0, 1)
		f.Until = &t
	}
	return f, nil
}

// HistoryExportCSV is the filtered history as CSV, one row per approval.
func (cn *Console) HistoryExportCSV(c echo.Context) error {
	return cn.historyExport(c, "text/csv; charset=utf-8", "csv", newCSVExport)
}

// HistoryExportJSON is the filtered history as a JSON array of the API's
// approval objects (GET /v1/approvals items, field for field).
func (cn *Console) HistoryExportJSON(c echo.Context) error {
	return cn.historyExport(c, "application/json", "json", newJSONExport)
}

// exportWriter writes one export format, row by row.
type exportWriter interface {
	row(a api.Approval) error
	end() error
}

// exportPageSize is the page the export reads at a time: the API's most.
const exportPageSize = 200

// historyExport streams every approval the filter selects, however many:
// it reads one keyset page at a time and writes each page's rows before it
// reads the next, so memory holds one page. The first page is read before
// the answer starts, so a bad filter or an outage is still an error page;
// a failure after that ends the download short (the log says why).
func (cn *Console) historyExport(c echo.Context, contentType, ext string, newWriter func(*bufio.Writer) exportWriter) error {
	f, err := historyFilter(historyForm(c.QueryParams()))
	if err != nil {
		return err
	}
	f.Limit = exportPageSize
	p, _ := httpx.PrincipalOf(c)
	ctx := c.Request().Context()
	page, err := cn.svc.ListApprovals(ctx, p, f)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	securityHeaders(h)
	h.Set("Cache-Control", "no-store")
	h.Set(echo.HeaderContentType, contentType)
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="gatehouse-history-%s.%s"`, cn.now().UTC().Format("20060102-150405"), ext))
	c.Response().WriteHeader(http.StatusOK)
	bw := bufio.NewWriter(c.Response())
	w := newWriter(bw)
	for {
		for _, a := range page.Items {
			if err := w.row(a); err != nil {
				return cn.exportFailed(c, err)
			}
		}
		if err := bw.Flush(); err != nil {
			return cn.exportFailed(c, err)
		}
		c.Response().Flush()
		if page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
		if page, err = cn.svc.ListApprovals(ctx, p, f); err != nil {
			return cn.exportFailed(c, err)
		}
	}
	if err := w.end(); err != nil {
		return cn.exportFailed(c, err)
	}
	if err := bw.Flush(); err != nil {
		return cn.exportFailed(c, err)
	}
	return nil
}

// exportFailed logs an export that broke after its answer began; the
// status is sent, so the client sees a short file, not an error page.
func (cn *Console) exportFailed(c echo.Context, err error) error {
	cn.log.WarnContext(c.Request().Context(), "history export ended early", "request_id", httpx.RequestID(c), "error", err)
	return nil
}

// jsonExport writes a JSON array, one approval at a time.
type jsonExport struct {
	w     *bufio.Writer
	enc   *json.Encoder
	count int
}

func newJSONExport(w *bufio.Writer) exportWriter {
	return &jsonExport{w: w, enc: json.NewEncoder(w)}
}

func (e *jsonExport) row(a api.Approval) error {
	sep := ","
	if e.count == 0 {
		sep = "["
	}
	e.count++
	if _, err := e.w.WriteString(sep); err != nil {
		return err
	}
	return e.enc.Encode(a)
}

func (e *jsonExport) end() error {
	if e.count == 0 {
		_, err := e.w.WriteString("[]\n")
		return err
	}
	_, err := e.w.WriteString("]\n")
	return err
}

// csvColumns are the CSV export's columns, named as the API names them.
var csvColumns = []string{
	"id", "created_at", "resolved_at", "status", "resolution", "resolved_by", "resolution_reason",
	"risk", "tool_name", "agent_id", "action_summary", "policy_reason", "run_id", "session_id", "arguments_hash",
}

type csvExport struct {
	w      *csv.Writer
	header bool
}

func newCSVExport(w *bufio.Writer) exportWriter { return &csvExport{w: csv.NewWriter(w)} }

func (e *csvExport) row(a api.Approval) error {
	if !e.header {
		e.header = true
		if err := e.w.Write(csvColumns); err != nil {
			return err
		}
	}
	resolvedAt := ""
	if a.ResolvedAt != nil {
		resolvedAt = a.ResolvedAt.UTC().Format(time.RFC3339Nano)
	}
	rec := []string{
		a.ID, a.CreatedAt.UTC().Format(time.RFC3339Nano), resolvedAt, string(a.Status), string(a.Resolution),
		a.ResolvedBy, a.ResolutionReason, string(a.Risk), a.ToolName, a.AgentID, a.ActionSummary,
		a.PolicyReason, a.RunID, a.SessionID, a.ArgumentsHash,
	}
	for i, v := range rec {
		rec[i] = inertCell(v)
	}
	if err := e.w.Write(rec); err != nil {
		return err
	}
	e.w.Flush()
	return e.w.Error()
}

func (e *csvExport) end() error {
	if !e.header {
		if err := e.w.Write(csvColumns); err != nil {
			return err
		}
	}
	e.w.Flush()
	return e.w.Error()
}

// inertCell keeps a cell from being read as a formula by a spreadsheet:
// summaries and reasons come from agents and may be written to attack
// whoever opens the export (CSV injection), so a leading =, +, -, @, tab or
// carriage return gets an apostrophe before it.
func inertCell(v string) string {
	if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
		return "'" + v
	}
	return v
}
