package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"gatehouse/api"
	"gatehouse/engine"
	"gatehouse/service"
)

// principal is the authenticated principal; the auth middleware guarantees
// one on every /v1 route that calls this.
func principal(c echo.Context) engine.Principal {
	p, _ := principalOf(c)
	return p
}

func (s *Server) runSubmit(c echo.Context) error {
	var in service.SubmitRunInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	run, err := s.cfg.Service.SubmitRun(c.Request().Context(), principal(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, run)
}

func (s *Server) runGet(c echo.Context) error {
	run, err := s.cfg.Service.GetRun(c.Request().Context(), principal(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

// runClaim answers 204 when there is nothing to claim.
func (s *Server) runClaim(c echo.Context) error {
	var in service.ClaimInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	run, ok, err := s.cfg.Service.ClaimRun(c.Request().Context(), principal(c), in)
	if err != nil {
		return err
	}
	if !ok {
		return c.NoContent(http.StatusNoContent)
	}
	return c.JSON(http.StatusOK, run)
}

func (s *Server) runHeartbeat(c echo.Context) error {
	var in api.HeartbeatRequest
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	run, err := s.cfg.Service.Heartbeat(c.Request().Context(), principal(c), c.Param("id"), in.Lease, in.LeaseSeconds)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

func (s *Server) actionPropose(c echo.Context) error {
	var in api.ProposeRequest
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	res, err := s.cfg.Service.Propose(c.Request().Context(), principal(c), c.Param("id"), in.Lease, in.Action)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

func (s *Server) invocationResume(c echo.Context) error {
	var in api.ResumeRequest
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	res, err := s.cfg.Service.Resume(c.Request().Context(), principal(c), c.Param("id"), c.Param("inv"), in.Lease, in.ResumeInput)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

func (s *Server) invocationResult(c echo.Context) error {
	var in api.StatusRequest
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	inv, err := s.cfg.Service.RecordResult(c.Request().Context(), principal(c), c.Param("id"), c.Param("inv"), in.Lease, in.Status)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, inv)
}

func (s *Server) runComplete(c echo.Context) error {
	var in api.StatusRequest
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	run, err := s.cfg.Service.CompleteRun(c.Request().Context(), principal(c), c.Param("id"), in.Lease, in.Status)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

// runCancel takes no body; any body sent is ignored.
func (s *Server) runCancel(c echo.Context) error {
	run, err := s.cfg.Service.CancelRun(c.Request().Context(), principal(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}
