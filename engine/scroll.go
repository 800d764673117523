package engine

import (
	"encoding/json"
	"math"
)

// CondBoundedBrowserScroll (ADR-0168) holds only for a validated bounded
// scroll through the isolated browser provider; a tool rule names it with
// otherwise: require_approval, so anything else the browser tool does goes
// to a human.
const CondBoundedBrowserScroll = "bounded_browser_scroll"

// Bounds of a scroll the condition lets through without a human.
const (
	MaxScrollPixels   = 4000 // per axis, either direction
	MaxPostconditions = 8
	maxPredicateValue = 512
)

// scrollArguments is the closed set of arguments a bounded scroll may
// carry: anything else (a selector to type into, a claim that the page is
// harmless, a provider hint) makes it an ordinary browser action.
var scrollArguments = map[string]bool{"action": true, "url": true, "scroll_x": true, "scroll_y": true, "postconditions": true}

// observationPredicates are what a scroll's optional postconditions may
// check afterwards: observations of the page, never instructions to it.
var observationPredicates = map[string]bool{"url_equals": true, "url_prefix": true, "selector_visible": true, "text_visible": true}

// boundedBrowserScroll checks, in order: the exact tool name and action
// kind; the catalog's conservative write classification (external_write,
// non-idempotent: a catalog that calls the browser a read does not get to
// use this condition); the isolated browser provider as the target (fixed
// by the catalog); the closed argument fields; action "scroll" on an
// http(s) page; integral offsets within the bounds, not both zero; and each
// postcondition an observation predicate. Nothing the provider or the page
// says is read.
func boundedBrowserScroll(a *ProposedAction) bool {
	if a.Name != BrowserActTool || a.Kind != ActionToolCall ||
		a.SideEffect != SideEffectExternalWrite || a.Idempotency != IdempotencyNonIdempotent ||
		a.Target.Kind != TargetBrowserProvider {
		return false
	}
	for k := range a.Arguments {
		if !scrollArguments[k] {
			return false
		}
	}
	if a.Arguments["action"] != "scroll" {
		return false
	}
	if _, _, ok := BrowserTarget(a.Arguments); !ok {
		return false
	}
	x, okX := scrollOffset(a.Arguments, "scroll_x")
	y, okY := scrollOffset(a.Arguments, "scroll_y")
	if !okX || !okY || x == 0 && y == 0 {
		return false
	}
	post, present := a.Arguments["postconditions"]
	return !present || observationList(post)
}

// scrollOffset is an optional integral pixel offset within the bounds; an
// absent offset is zero.
func scrollOffset(args map[string]any, name string) (float64, bool) {
	v, present := args[name]
	if !present {
		return 0, true
	}
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case int:
		f = float64(n)
	case json.Number:
		var err error
		if f, err = n.Float64(); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	return f, f == math.Trunc(f) && math.Abs(f) <= MaxScrollPixels
}

// observationList reports whether v is a list of at most MaxPostconditions
// predicates, each exactly {kind, value} with a known kind and a short
// non-empty string value.
func observationList(v any) bool {
	list, ok := v.([]any)
	if !ok || len(list) > MaxPostconditions {
		return false
	}
	for _, item := range list {
		p, ok := item.(map[string]any)
		if !ok || len(p) != 2 {
			return false
		}
		kind, _ := p["kind"].(string)
		value, _ := p["value"].(string)
		if !observationPredicates[kind] || value == "" || len(value) > maxPredicateValue {
			return false
		}
	}
	return true
}
