package otelmetrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprometheus "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/otelmetrics"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
)

// serve records gocurator's metrics with an OpenTelemetry SDK whose reader
// is the Prometheus exporter, and serves them at http://addr/metrics. It
// returns the event hook to give the clients, the address the server
// listens at, and a function that stops the server and the SDK.
func serve(addr string, opts ...otelmetrics.Option) (hook *otelmetrics.Metrics, listening string, stop func(), err error) {
	registry := prometheus.NewRegistry() // or prometheus.DefaultRegisterer, with Go's own metrics
	exporter, err := otelprometheus.New(otelprometheus.WithRegisterer(registry))
	if err != nil {
		return nil, "", nil, err
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	hook, err = otelmetrics.New(provider, opts...)
	if err != nil {
		provider.Shutdown(context.Background())
		return nil, "", nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		provider.Shutdown(context.Background())
		return nil, "", nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	stop = func() {
		srv.Close()
		<-served
		provider.Shutdown(context.Background())
	}
	return hook, ln.Addr().String(), stop, nil
}

// scrape returns what http://addr/metrics serves, as Prometheus would read
// it.
func scrape(addr string) (string, error) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = errors.New(resp.Status)
	}
	return string(body), err
}

// A mutex acquired and released twice, seen at /metrics.
func Example() {
	metrics, addr, stop, err := serve("127.0.0.1:0") // ":9464" in a real program
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	client, err := framework.New(os.Getenv("ZK_SERVERS"), retry.NewExponentialBackoff(100*time.Millisecond, 5),
		framework.WithEventHook(metrics))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	mu, err := recipes.NewInterProcessMutex(client, "/examples/otelmetrics")
	if err != nil {
		fmt.Println(err)
		return
	}
	h := mu.NewHandle()
	for range 2 {
		if err := h.Acquire(ctx); err != nil {
			fmt.Println(err)
			return
		}
		h.Release(ctx)
	}
	client.Close()
	<-client.Closed() // the hook has heard every event

	metricsText, err := scrape(addr)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Each sample is labelled with the lock's path and the recipe (and the
	// meter's name), as in
	//
	//	gocurator_lock_acquisitions_total{gocurator_path="/examples/otelmetrics",gocurator_recipe="mutex",otel_scope_name=...} 2
	//
	// Shown here without them, and without the histograms' buckets and sums:
	for _, line := range strings.Split(metricsText, "\n") {
		name, labels, found := strings.Cut(line, "{")
		if !found || !strings.HasPrefix(name, "gocurator_lock_") || strings.HasSuffix(name, "_bucket") || strings.HasSuffix(name, "_sum") {
			continue
		}
		_, value, _ := strings.Cut(labels, "} ")
		fmt.Println(name, value)
	}
	// Output:
	// gocurator_lock_acquire_duration_seconds_count 2
	// gocurator_lock_acquisitions_total 2
	// gocurator_lock_hold_duration_seconds_count 2
	// gocurator_lock_holder_count 0
	// gocurator_lock_waiter_count 0
}

// A mutex acquired and released under a request's span: the acquire's span
// and the hold's are its children. A real program gives NewTracing its
// tracer provider (otel.GetTracerProvider()), and the Tracing and a Metrics
// to the client as two hooks.
func ExampleNewTracing() {
	exporter := tracetest.NewInMemoryExporter() // an OTLP exporter in a real program
	provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	defer provider.Shutdown(context.Background())
	tracing, err := otelmetrics.NewTracing(provider)
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := framework.New(os.Getenv("ZK_SERVERS"), retry.NewExponentialBackoff(100*time.Millisecond, 5),
		framework.WithEventHook(tracing))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	mu, err := recipes.NewInterProcessMutex(client, "/examples/tracing")
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctx, request := provider.Tracer("example").Start(ctx, "request")
	h := mu.NewHandle()
	if err := h.Acquire(ctx); err != nil {
		fmt.Println(err)
		return
	}
	h.Release(ctx)
	request.End()
	client.Close()
	<-client.Closed() // the hooks have heard every event

	for _, span := range exporter.GetSpans() {
		if span.Name == "request" {
			continue
		}
		var outcome string
		for _, kv := range span.Attributes {
			if kv.Key == "gocurator.outcome" {
				outcome = kv.Value.AsString()
			}
		}
		fmt.Println(span.Name, outcome, "child of request:", span.Parent.SpanID() == request.SpanContext().SpanID())
	}
	// Output:
	// gocurator.lock.acquire acquired child of request: true
	// gocurator.lock.hold released child of request: true
}
