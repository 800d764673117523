package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// maxResponse bounds what is read of a receiver's answer.
const maxResponse = 1 << 20

// poster sends one request per call with its own timeout, so a slow receiver
// costs one attempt, never the worker.
type poster struct {
	client  *http.Client
	timeout time.Duration
}

// post sends body and returns the status and the (bounded) response body. A
// transport failure or a 5xx, 408, 425 or 429 is a retryable error; any other
// non-2xx, redirects included, is Permanent. Errors never carry the URL: a
// webhook path or a push endpoint is a capability.
func (p poster) post(ctx context.Context, target string, header http.Header, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, nil, Permanent(errors.New("cannot build the request"))
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, transportError(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return resp.StatusCode, nil, transportError(err)
	}
	return resp.StatusCode, data, statusError(resp.StatusCode, data)
}

// transportError strips the URL a *url.Error carries.
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("timed out")
	}
	return err
}

// statusError classifies an HTTP status: nil for 2xx.
func statusError(code int, body []byte) error {
	if code >= 200 && code < 300 {
		return nil
	}
	err := fmt.Errorf("HTTP %d%s", code, snippet(body))
	if retryableStatus(code) {
		return err
	}
	return Permanent(err)
}

func retryableStatus(code int) bool {
	return code >= 500 || code == http.StatusRequestTimeout || code == http.StatusTooEarly || code == http.StatusTooManyRequests
}

// snippet is the start of a response body for an attempt log: enough to tell
// "invalid token" from "rate limited", as plain text.
func snippet(body []byte) string {
	s := plain(string(body), 120)
	if s == "" {
		return ""
	}
	return ": " + s
}
