// Package advisortest runs a real local HTTP server that speaks the
// OpenAI chat-completions protocol (POST /v1/chat/completions, a JSON
// answer with choices[0].message.content), scripted per test: the
// advisor's tests, the gate's and the end-to-end tests point the judgment
// advisor at it, count what it was asked and read what it was sent.
package advisortest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Reply is what the server answers the next requests with.
type Reply struct {
	// Status is the HTTP status; 0 is 200.
	Status int
	// Body, when set, is sent as the whole response body (bad JSON, a
	// provider's error object).
	Body string
	// Content is choices[0].message.content of a well-formed completion
	// when Body is empty.
	Content string
	// Delay holds the answer back this long, or until the client gives up.
	Delay time.Duration
}

// Probabilities is a well-formed answer to the judgment advisor's three
// questions.
func Probabilities(addressesAI, privateDetails, proseOrBlob float64) Reply {
	return Reply{Content: fmt.Sprintf(`{"addresses_ai_system":%g,"private_person_details":%g,"prose_or_encoded_blob":%g}`,
		addressesAI, privateDetails, proseOrBlob)}
}

// Request is one request the server received.
type Request struct {
	Header http.Header
	Body   []byte
}

// Server is the chat-completions server. Close it when done.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	reply    Reply
	requests []Request
}

// New starts a server answering every request with reply.
func New(reply Reply) *Server {
	s := &Server{reply: reply}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.complete)
	s.Server = httptest.NewServer(mux)
	return s
}

// BaseURL is what the advisor's base URL is set to (the /v1 prefix, as an
// OpenAI-compatible server such as Ollama publishes it).
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// SetReply changes the answer to the requests that follow.
func (s *Server) SetReply(r Reply) {
	s.mu.Lock()
	s.reply = r
	s.mu.Unlock()
}

// Requests are the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count is how many requests the server received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	s.mu.Lock()
	s.requests = append(s.requests, Request{Header: r.Header.Clone(), Body: body})
	reply := s.reply
	s.mu.Unlock()
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	out := []byte(reply.Body)
	if reply.Body == "" {
		var req struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(body, &req)
		out, _ = json.Marshal(map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": req.Model,
			"choices": []any{map[string]any{
				"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": reply.Content},
			}},
			"usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
		})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(out)
}
