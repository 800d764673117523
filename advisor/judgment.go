// Package advisor holds the advisory layer's judgment advisor (seed §3):
// an engine.PolicyAdvisor that asks a model three narrow questions over an
// OpenAI-compatible chat-completions endpoint (Ollama, vLLM, llama.cpp's
// server, hosted providers) with structured output by JSON schema, and
// decides in code. It sees the proposed action and nothing else: it imports
// neither the policy loader nor anything of the hardline rules (a test
// lists its dependencies and the engine names it uses), and it never
// returns deny. Every failure is an engine.Abstention with its cause.
package advisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"gatehouse/engine"
)

// DefaultTimeout bounds one consultation: a call measured in tenths of a
// second, abstaining when it runs over.
const DefaultTimeout = 2 * time.Second

// Config is how to reach the model.
type Config struct {
	// BaseURL is the endpoint's API root, e.g. http://127.0.0.1:11434/v1
	// for a local Ollama.
	BaseURL string
	// Model is the model name the endpoint knows.
	Model string
	// APIKeyEnv names the environment variable holding the API key, read
	// at each consultation (a rotated key needs no restart). Empty: no key
	// is sent (a local server). Named but empty: every consultation
	// abstains missing_credential without a request.
	APIKeyEnv string
	// Timeout bounds a consultation; 0 is DefaultTimeout.
	Timeout time.Duration
	// HTTPClient carries the requests; nil is a client of its own.
	HTTPClient *http.Client
	// Getenv reads APIKeyEnv; nil is os.Getenv.
	Getenv func(string) string
}

// Judgment is the judgment-backed advisor.
type Judgment struct {
	cfg         Config
	completions openai.ChatCompletionService
}

var _ engine.PolicyAdvisor = (*Judgment)(nil)

// New checks cfg and builds the advisor. It reads no OPENAI_* variable:
// everything comes from cfg.
func New(cfg Config) (*Judgment, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("advisor: base URL must be an absolute http or https URL")
	}
	if cfg.Model == "" {
		return nil, errors.New("advisor: a model name is required")
	}
	if cfg.Timeout < 0 || cfg.Timeout > time.Minute {
		return nil, errors.New("advisor: timeout must be between 0 and 60 seconds")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	// The service, not the client's defaults: NewClient would read
	// OPENAI_API_KEY and OPENAI_BASE_URL from the environment. No retries:
	// a consultation is one request inside its timeout.
	completions := openai.NewChatCompletionService(
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0),
	)
	return &Judgment{cfg: cfg, completions: completions}, nil
}

// Version is the advisor_version of every verdict.
func (j *Judgment) Version() string { return Version }

// Advise implements engine.PolicyAdvisor: require_approval naming the
// signals that fired, or abstain; an error is an engine.Abstention.
func (j *Judgment) Advise(ctx context.Context, a engine.ProposedAction) (engine.AdvisoryVerdict, error) {
	msg, truncated := state(a)
	if truncated {
		return escalate([]string{signalTruncated}), nil
	}
	var opts []option.RequestOption
	if j.cfg.APIKeyEnv != "" {
		key := j.cfg.Getenv(j.cfg.APIKeyEnv)
		if key == "" {
			return engine.AdvisoryVerdict{}, &engine.Abstention{Cause: engine.AbstainMissingCredential}
		}
		opts = append(opts, option.WithAPIKey(key))
	}
	ctx, cancel := context.WithTimeout(ctx, j.cfg.Timeout)
	defer cancel()
	// The body is read raw and decoded here, so an answer that is not a
	// completion is told apart from a failed request.
	var raw []byte
	opts = append(opts, option.WithResponseBodyInto(&raw))
	_, err := j.completions.New(ctx, openai.ChatCompletionNewParams{
		Model:       j.cfg.Model,
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(systemPrompt), openai.UserMessage(msg)},
		Temperature: openai.Float(0),
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "advisory_judgment", Schema: answerSchema, Strict: openai.Bool(true)},
		}},
	}, opts...)
	if err != nil {
		return engine.AdvisoryVerdict{}, classify(ctx, err)
	}
	var completion struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &completion); err != nil || len(completion.Choices) == 0 {
		return engine.AdvisoryVerdict{}, &engine.Abstention{Cause: engine.AbstainInvalidResponse, Err: fmt.Errorf("not a chat completion with a choice: %w", err)}
	}
	answers, err := parseAnswer(completion.Choices[0].Message.Content)
	if err != nil {
		return engine.AdvisoryVerdict{}, &engine.Abstention{Cause: engine.AbstainInvalidResponse, Err: err}
	}
	return decide(answers, a.OriginTrust.MayAuthorize()), nil
}

// classify names a failed request's cause: our deadline is a timeout;
// anything else (an HTTP error status, a refused connection) is a
// provider error.
func classify(ctx context.Context, err error) error {
	cause := engine.AbstainProviderError
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		cause = engine.AbstainTimeout
	}
	return &engine.Abstention{Cause: cause, Err: err}
}

// parseAnswer reads the model's content strictly: one JSON object with
// exactly the three properties, each a number in [0, 1].
func parseAnswer(content string) (map[string]float64, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(content)))
	dec.UseNumber()
	var raw map[string]json.Number
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("answer is not a JSON object of numbers: %w", err)
	}
	if dec.More() {
		return nil, errors.New("answer has content after the object")
	}
	if len(raw) != len(questions) {
		return nil, fmt.Errorf("answer has %d properties, want %d", len(raw), len(questions))
	}
	out := make(map[string]float64, len(questions))
	for _, q := range questions {
		n, ok := raw[q.Field]
		if !ok {
			return nil, fmt.Errorf("answer lacks %s", q.Field)
		}
		p, err := n.Float64()
		if err != nil || math.IsNaN(p) || p < 0 || p > 1 {
			return nil, fmt.Errorf("%s is not a probability", q.Field)
		}
		out[q.Field] = p
	}
	return out, nil
}

// decide is the code that decides: every question at or above its
// threshold (the strict one when the origin cannot authorize) fires its
// signal, and any signal escalates. No answer can veto another.
func decide(answers map[string]float64, originMayAuthorize bool) engine.AdvisoryVerdict {
	var fired []string
	for _, q := range questions {
		threshold := q.Strict
		if originMayAuthorize {
			threshold = q.Threshold
		}
		if answers[q.Field] >= threshold {
			fired = append(fired, q.Signal)
		}
	}
	if len(fired) == 0 {
		return engine.AdvisoryVerdict{Verdict: engine.AdvisoryAbstain, AdvisorVersion: Version}
	}
	return escalate(fired)
}

func escalate(signals []string) engine.AdvisoryVerdict {
	return engine.AdvisoryVerdict{Verdict: engine.AdvisoryRequireApproval, Signals: signals, AdvisorVersion: Version}
}
