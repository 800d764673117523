// Package metrics holds Gatehouse's Prometheus series: the domain counts
// the service reports (service.Metrics) and the HTTP request durations the
// server observes.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"gatehouse/engine"
	"gatehouse/service"
)

// Metrics are the counts the seed tracks plus HTTP request durations, on a
// registry of their own (the process-global default registry is shared
// mutable state that tests and replicas would trip over). It implements
// service.Metrics.
type Metrics struct {
	registry *prometheus.Registry

	approvalRequests  *prometheus.CounterVec
	approvalLatency   *prometheus.HistogramVec
	approvalExpiries  *prometheus.CounterVec
	denials           *prometheus.CounterVec
	breakerTrips      prometheus.Counter
	revalidationVoids *prometheus.CounterVec
	httpDuration      *prometheus.HistogramVec
	deliveries        *prometheus.CounterVec
	deliveryLatency   *prometheus.HistogramVec
	outboxBacklog     prometheus.Gauge
	advisoryVerdicts  *prometheus.CounterVec
	advisoryLatency   prometheus.Histogram
	advisoryAbstains  *prometheus.CounterVec
}

var _ service.Metrics = (*Metrics)(nil)

// New registers every metric, plus the Go runtime and process
// collectors, on a fresh registry.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		approvalRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_approval_requests_total",
			Help: "Approval requests created, by side effect and risk.",
		}, []string{"side_effect", "risk"}),
		// Approval latency spans seconds (a human at a desk) to hours (the
		// expiry defaults); p50 and p95 are histogram_quantile over this.
		approvalLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gatehouse_approval_latency_seconds",
			Help:    "Time from approval request to its final status, by status.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600},
		}, []string{"status"}),
		approvalExpiries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_approval_expiries_total",
			Help: "Approvals expired (by the reaper, or when a resolution came too late), by risk.",
		}, []string{"risk"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_policy_denials_total",
			Help: "Denied actions, by reason code.",
		}, []string{"reason_code"}),
		breakerTrips: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_circuit_breaker_trips_total",
			Help: "Runs failed by the circuit breaker (third identical denial).",
		}),
		revalidationVoids: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_revalidation_voids_total",
			Help: "Resumes refused by revalidation, by cause.",
		}, []string{"cause"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gatehouse_http_request_duration_seconds",
			Help:    "HTTP request duration by method, route template and status.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route", "status"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_notification_deliveries_total",
			Help: "Notification delivery attempts, by channel and outcome (delivered, skipped, retry, failed).",
		}, []string{"channel", "outcome"}),
		deliveryLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gatehouse_notification_delivery_seconds",
			Help:    "Duration of one notification delivery attempt, by channel.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"channel"}),
		outboxBacklog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_notification_outbox_backlog",
			Help: "Notification deliveries waiting to be sent (as of this replica's last notifier pass).",
		}),
		advisoryVerdicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_advisory_consultations_total",
			Help: "Advisory verdicts on consulted actions, by verdict and mode (enforced true or false: observing).",
		}, []string{"verdict", "enforced"}),
		// A consultation is a model call budgeted in tenths of a second.
		advisoryLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gatehouse_advisory_consultation_seconds",
			Help:    "Duration of advisory consultations that returned a verdict.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5},
		}),
		advisoryAbstains: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_advisory_abstentions_total",
			Help: "Advisory consultations that gave no verdict, by cause (timeout, provider_error, missing_credential, invalid_response).",
		}, []string{"cause"}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.approvalRequests, m.approvalLatency, m.approvalExpiries, m.denials,
		m.breakerTrips, m.revalidationVoids, m.httpDuration,
		m.deliveries, m.deliveryLatency, m.outboxBacklog,
		m.advisoryVerdicts, m.advisoryLatency, m.advisoryAbstains,
	)
	return m
}

// Registry is where the metrics live (for tests and extra collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the registry in the Prometheus text format (/metrics).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

func (m *Metrics) ApprovalRequested(side engine.SideEffectClass, risk engine.RiskLevel) {
	m.approvalRequests.WithLabelValues(string(side), string(risk)).Inc()
}

func (m *Metrics) ApprovalResolved(status engine.ApprovalStatus, latency time.Duration) {
	m.approvalLatency.WithLabelValues(string(status)).Observe(latency.Seconds())
}

func (m *Metrics) ApprovalExpired(risk engine.RiskLevel) {
	m.approvalExpiries.WithLabelValues(string(risk)).Inc()
}

func (m *Metrics) Denied(reasonCode string) { m.denials.WithLabelValues(reasonCode).Inc() }

func (m *Metrics) CircuitBreakerTripped() { m.breakerTrips.Inc() }

func (m *Metrics) RevalidationVoided(cause string) { m.revalidationVoids.WithLabelValues(cause).Inc() }

func (m *Metrics) NotificationDelivered(channel, outcome string, latency time.Duration) {
	m.deliveries.WithLabelValues(channel, outcome).Inc()
	m.deliveryLatency.WithLabelValues(channel).Observe(latency.Seconds())
}

func (m *Metrics) NotificationBacklog(pending int) { m.outboxBacklog.Set(float64(pending)) }

func (m *Metrics) AdvisoryConsulted(verdict string, enforced bool, latency time.Duration) {
	m.advisoryVerdicts.WithLabelValues(verdict, strconv.FormatBool(enforced)).Inc()
	m.advisoryLatency.Observe(latency.Seconds())
}

func (m *Metrics) AdvisoryAbstained(cause string) { m.advisoryAbstains.WithLabelValues(cause).Inc() }

// ObserveHTTP records one request's duration under its route template.
func (m *Metrics) ObserveHTTP(method, route string, status int, d time.Duration) {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
	default:
		// The method is client-chosen text: bound the label's cardinality.
		method = "OTHER"
	}
	m.httpDuration.WithLabelValues(method, route, strconv.Itoa(status)).Observe(d.Seconds())
}
