package api

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/handlers/internal/httpx"
)

func (h *Handlers) RunSubmit(c echo.Context) error {
	var in api.SubmitRunInput
	if err := httpx.DecodeJSON(c, &in); err != nil {
		return err
	}
	run, err := h.svc.SubmitRun(c.Request().Context(), principal(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, run)
}

func (h *Handlers) RunGet(c echo.Context) error {
	run, err := h.svc.GetRun(c.Request().Context(), principal(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

// RunClaim answers 204 when there is nothing to claim.
func (h *Handlers) RunClaim(c echo.Context) error {
	var in api.ClaimInput
	if err := httpx.DecodeJSON(c, &in); err != nil {
		return err
	}
	run, ok, err := h.svc.ClaimRun(c.Request().Context(), principal(c), in)
	if err != nil {
		return err
	}
	if !ok {
		return c.NoContent(http.StatusNoContent)
	}
	return c.JSON(http.StatusOK, run)
}

func (h *Handlers) RunHeartbeat(c echo.Context) error {
	var in api.HeartbeatRequest
	if err := httpx.DecodeJSON(c, &in); err != nil {
		return err
	}
	run, err := h.svc.Heartbeat(c.Request().Context(), principal(c), c.Param("id"), in.Lease, in.LeaseSeconds)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

// ActionPropose answers a proposal. An action the strict decoder refuses
// for its shape (a field of the wrong type or range, a field the schema
// does not have) is still a proposal when its action_id and the lease can
// be read: the seed answers it DENY policy.unclassifiable_action, recorded
// so the model reads a denial and the circuit breaker counts it. Only a
// body that cannot be read as a proposal at all stays a 400: not JSON,
// bytes the strict decoder refuses (duplicate keys, invalid UTF-8, NUL), no
// action, no usable action_id, a malformed lease.
func (h *Handlers) ActionPropose(c echo.Context) error {
	body, err := httpx.ReadBody(c)
	if err != nil {
		return err
	}
	ctx, p, runID := c.Request().Context(), principal(c), c.Param("id")
	var in api.ProposeRequest
	var res api.ProposeResult
	if decodeErr := httpx.DecodeBody(body, &in); decodeErr != nil {
		readable, ok := readableProposal(body)
		if !ok {
			return decodeErr
		}
		res, err = h.svc.ProposeUnreadable(ctx, p, runID, readable.Lease, readable.Action)
	} else {
		res, err = h.svc.Propose(ctx, p, runID, in.Lease, in.Action)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

// readableProposal reads what it can of a proposal the strict decoder
// refused: the lease and the action's object strictly (so bytes the strict
// decoder refuses never get through), then each action field on its own,
// keeping those that decode. ok=false when there is nothing to key a
// record on: no lease, no action object or no uuid action_id.
func readableProposal(body []byte) (api.ProposeRequest, bool) {
	var env struct {
		api.Lease
		Action json.RawMessage `json:"action"`
	}
	var fields map[string]json.RawMessage
	var id string
	if engine.DecodeStrict(body, &env) != nil || engine.DecodeStrict(env.Action, &fields) != nil ||
		json.Unmarshal(fields["action_id"], &id) != nil || !engine.ValidUUID(id) {
		return api.ProposeRequest{}, false
	}
	out := api.ProposeRequest{Lease: env.Lease}
	for name, raw := range fields {
		one, err := json.Marshal(map[string]json.RawMessage{name: raw})
		if err != nil {
			continue
		}
		// Probe first: a field that fails may leave part of itself set.
		var probe engine.ActionRequest
		if engine.DecodeStrict(one, &probe) == nil {
			_ = engine.DecodeStrict(one, &out.Action)
		}
	}
	if httpx.RefuseNUL(&out, "json") != nil {
		return api.ProposeRequest{}, false
	}
	return out, true
}

func (h *Handlers) InvocationResume(c echo.Context) error {
	var in api.ResumeRequest
	if err := httpx.DecodeJSON(c, &in); err != nil {
		return err
	}
	res, err := h.svc.Resume(c.Request().Context(), principal(c), c.Param("id"), c.Param("inv"), in.Lease, in.ResumeInput)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

func (h *Handlers) InvocationResult(c echo.Context) error {
	var in api.StatusRequest
	if err := httpx.DecodeJSON(c, &in); err != nil {
		return err
	}
	inv, err := h.svc.RecordResult(c.Request().Context(), principal(c), c.Param("id"), c.Param("inv"), in.Lease, in.Status)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, inv)
}

func (h *Handlers) RunComplete(c echo.Context) error {
	var in api.StatusRequest
	if err := httpx.DecodeJSON(c, &in); err != nil {
		return err
	}
	run, err := h.svc.CompleteRun(c.Request().Context(), principal(c), c.Param("id"), in.Lease, in.Status)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

// RunCancel takes no body; any body sent is ignored.
func (h *Handlers) RunCancel(c echo.Context) error {
	run, err := h.svc.CancelRun(c.Request().Context(), principal(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}
