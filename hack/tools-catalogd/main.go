// catalogd-bench: catalogd's catalog HTTP server without a cluster, and a load
// generator for any server of the same API. For hack/bench-catalog-api only.
//
//	catalogd-bench serve --fbc DIR --listen 127.0.0.1:PORT --catalog NAME [--store DIR]
//	catalogd-bench load --url BASE --path PATH --requests N --concurrency C [--token T] [--insecure] [--gzip]
//
// serve stores DIR with catalogd's own storage (LocalDirV1, the metas handler on, as the
// APIV1MetasHandler gate turns it on) exactly as the ClusterCatalog reconciler does after
// unpacking an image, then serves catalogd's handler wrapped the way catalogd's catalog
// server wraps it, on plain HTTP. It prints "ready" on stdout once it accepts requests.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/gorilla/handlers"
	"github.com/klauspost/compress/gzhttp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	// internal/ of another module: importable only because this module's path lies
	// under github.com/operator-framework/operator-controller (see go.mod).
	catalogdmetrics "github.com/operator-framework/operator-controller/internal/catalogd/metrics"
	"github.com/operator-framework/operator-controller/internal/catalogd/storage"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: catalogd-bench serve|load [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "load":
		err = load(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q (serve, load)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "catalogd-bench:", err)
		os.Exit(1)
	}
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	fbc := fs.String("fbc", "", "FBC directory (what catalogd unpacks from the image's configs label)")
	listen := fs.String("listen", "127.0.0.1:8080", "address to serve on (plain HTTP)")
	catalog := fs.String("catalog", "bench", "ClusterCatalog name")
	storeDir := fs.String("store", "", "storage root (default: a temporary directory, removed on exit)")
	requestLog := fs.Bool("request-log", true, "log every request as catalogd does (klog to stderr)")
	_ = fs.Parse(args)
	if *fbc == "" {
		return fmt.Errorf("serve: --fbc DIR is required")
	}
	// catalogd's own logger (cmd/catalogd: ctrl.SetLogger(klog.NewKlogr())).
	log := klog.NewKlogr().WithName("catalogd-http-server")

	root := *storeDir
	if root == "" {
		d, err := os.MkdirTemp("", "catalogd-store-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		root = d
	}
	// catalogd advertises <external address>/catalogs/; the handler routes on its path.
	baseURL, err := url.Parse("http://" + *listen + "/catalogs/")
	if err != nil {
		return err
	}
	store := storage.NewLocalDirV1(root, baseURL, storage.MetasHandlerEnabled, storage.GraphQLQueriesDisabled)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The reconciler hands Store an os.DirFS of the unpacked configs directory.
	start := time.Now()
	if err := store.Store(ctx, *catalog, os.DirFS(*fbc)); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	fmt.Fprintf(os.Stderr, "stored catalog %q from %s in %.2fs (storage root %s)\n",
		*catalog, *fbc, time.Since(start).Seconds(), root)

	// The same chain as catalogd's serverutil.storageServerHandlerWrapped (unexported):
	// gzip when the client accepts it, the request-duration histogram, a log line per request.
	reg := prometheus.NewRegistry()
	reg.MustRegister(catalogdmetrics.RequestDurationMetric)
	var handler http.Handler = gzhttp.GzipHandler(store.StorageServerHandler())
	handler = catalogdmetrics.AddMetricsToHandler(handler)
	if *requestLog {
		handler = requestLogger(log, handler)
	}
	// catalogd's timeouts (serverutil.AddCatalogServerToManager).
	srv := &http.Server{Handler: handler, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Minute}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Println("ready")
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return err
	}
	return nil
}

// requestLogger logs what catalogd's logrLoggingHandler logs, so a request costs what it
// costs in catalogd (where the log goes to the container's stderr).
func requestLogger(l logr.Logger, next http.Handler) http.Handler {
	return handlers.CustomLoggingHandler(nil, next, func(_ io.Writer, p handlers.LogFormatterParams) {
		host, _, err := net.SplitHostPort(p.Request.RemoteAddr)
		if err != nil {
			host = p.Request.RemoteAddr
		}
		l.Info("handled request", "host", host, "username", "-", "method", p.Request.Method,
			"uri", p.Request.RequestURI, "protocol", p.Request.Proto, "status", p.StatusCode, "size", p.Size)
	})
}

type result struct {
	Requests      int     `json:"requests"`
	Errors        int     `json:"errors"`
	P50           float64 `json:"p50_ms"`
	P90           float64 `json:"p90_ms"`
	P99           float64 `json:"p99_ms"`
	Max           float64 `json:"max_ms"`
	Bytes         int64   `json:"bytes"`
	MBPerS        float64 `json:"mb_per_s"`
	FirstByteP50  float64 `json:"first_byte_ms_p50"`
	WallS         float64 `json:"wall_s"`
	BytesPerReply int64   `json:"bytes_per_response"`
}

func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	base := fs.String("url", "", "base URL, e.g. http://127.0.0.1:8080")
	path := fs.String("path", "", "request path and query, e.g. /catalogs/NAME/api/v1/all")
	requests := fs.Int("requests", 100, "total requests")
	concurrency := fs.Int("concurrency", 1, "requests in flight (one keep-alive connection each)")
	token := fs.String("token", "", "bearer token")
	insecure := fs.Bool("insecure", false, "skip TLS certificate verification")
	gzip := fs.Bool("gzip", false, "send Accept-Encoding: gzip (as Go clients such as operator-controller do); bytes are counted decompressed")
	timeout := fs.Duration("timeout", 5*time.Minute, "per-request timeout")
	_ = fs.Parse(args)
	if *base == "" || *path == "" || *requests < 1 || *concurrency < 1 {
		return fmt.Errorf("load: --url, --path, --requests >= 1 and --concurrency >= 1 are required")
	}
	target := *base + *path

	tr := &http.Transport{
		MaxIdleConnsPerHost: *concurrency,
		MaxConnsPerHost:     *concurrency,
		// Without gzip the transport asks for identity: the server's bytes are what we count.
		DisableCompression: !*gzip,
		// A non-nil empty map keeps the client on HTTP/1.1 even over TLS.
		TLSNextProto:    map[string]func(string, *tls.Conn) http.RoundTripper{},
		TLSClientConfig: &tls.Config{InsecureSkipVerify: *insecure}, //nolint:gosec // opt-in, loopback servers with self-signed certificates
	}
	client := &http.Client{Transport: tr, Timeout: *timeout}

	var (
		next      atomic.Int64
		bytes     atomic.Int64
		errs      atomic.Int64
		mu        sync.Mutex
		latencies = make([]float64, 0, *requests)
		firsts    = make([]float64, 0, *requests)
		firstErr  error
		wg        sync.WaitGroup
	)
	start := time.Now()
	for w := 0; w < *concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(*requests) {
				lat, first, n, err := fetch(client, target, *token)
				mu.Lock()
				if err != nil {
					errs.Add(1)
					if firstErr == nil {
						firstErr = err
					}
				} else {
					bytes.Add(n)
					latencies = append(latencies, lat)
					firsts = append(firsts, first)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start).Seconds()
	if firstErr != nil {
		fmt.Fprintf(os.Stderr, "load: %d errors, the first: %v\n", errs.Load(), firstErr)
	}

	slices.Sort(latencies)
	slices.Sort(firsts)
	r := result{
		Requests: *requests, Errors: int(errs.Load()),
		P50: pct(latencies, 50), P90: pct(latencies, 90), P99: pct(latencies, 99), Max: pct(latencies, 100),
		Bytes: bytes.Load(), MBPerS: round(float64(bytes.Load()) / wall / 1e6),
		FirstByteP50: pct(firsts, 50), WallS: round(wall),
	}
	if ok := len(latencies); ok > 0 {
		r.BytesPerReply = bytes.Load() / int64(ok)
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// fetch does one GET and reads the whole body: the latency is to its last byte, since a
// client can use none of a catalog query's answer before it has all of it.
func fetch(c *http.Client, target, token string) (lat, first float64, n int64, err error) {
	var gotFirst time.Time
	req, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		return 0, 0, 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotFirstResponseByte: func() { gotFirst = time.Now() },
	}))
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	// Drained even on errors, so the connection is reused and error bodies are not timed.
	n, err = io.Copy(io.Discard, resp.Body)
	if err != nil {
		return 0, 0, n, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, n, fmt.Errorf("GET %s: %s", target, resp.Status)
	}
	return ms(time.Since(start)), ms(gotFirst.Sub(start)), n, nil
}

// pct is the nearest-rank percentile of sorted values (100 = the maximum).
func pct(sorted []float64, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted) + 99) / 100
	return sorted[max(i, 1)-1]
}

func ms(d time.Duration) float64 { return round(float64(d.Microseconds()) / 1000) }
func round(f float64) float64    { return float64(int64(f*1000+0.5)) / 1000 }
