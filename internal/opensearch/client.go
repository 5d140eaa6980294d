// Package opensearch is the operator's narrow view of an OpenSearch cluster: the calls the
// controllers and the benchmark engine make, on top of the official opensearch-go client,
// with errors classified so callers can tell "retry later" from "refused".
package opensearch

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"k8s.io/utils/ptr"
)

// Config says how to reach a cluster. Credentials are held only in memory.
type Config struct {
	Endpoint           string
	Username           string
	Password           string
	CACert             []byte
	InsecureSkipVerify bool
	// RequestTimeout bounds one HTTP request; zero means 30s.
	RequestTimeout time.Duration
	// OnRequest, when set, is called once per HTTP request sent, with its method, path and
	// the settings it writes (for metrics, and for the tests that derive the operator's
	// OpenSearch role and check who writes which setting).
	OnRequest func(SentRequest)
}

// Client talks to one OpenSearch cluster. It is safe for concurrent use.
type Client struct {
	api       *opensearch.Client
	catalogue catalogueCache
}

// New returns a client for cfg. It makes no request.
func New(cfg Config) (*Client, error) {
	timeout := cfg.RequestTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	// TLS is set on the transport here: opensearch-go applies CACert and InsecureSkipVerify
	// only to a plain *http.Transport, and ours is wrapped to observe requests.
	tlsConfig, err := clientTLS(cfg)
	if err != nil {
		return nil, err
	}
	base.TLSClientConfig = tlsConfig
	c, err := opensearch.NewClient(opensearch.Config{
		Addresses:      []string{cfg.Endpoint},
		Username:       cfg.Username,
		Password:       cfg.Password,
		Transport:      observedTransport{next: base, onRequest: cfg.OnRequest},
		RequestTimeout: timeout,
		// Retries of a failed call belong to the reconcile loop's backoff, which also
		// records the failure in status; a hidden retry here would only delay that.
		DisableRetry:          true,
		DiscoverNodesOnStart:  ptr.To(false),
		HealthCheckMaxRetries: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("opensearch client for %s: %w", cfg.Endpoint, err)
	}
	return &Client{api: c, catalogue: catalogueCache{sem: make(chan struct{}, 1)}}, nil
}

// Close stops the client's background work (opensearch-go polls node statistics) and
// closes its idle connections. Requests under way finish.
func (c *Client) Close() { _ = c.api.Close() }

// clientTLS is the TLS configuration of cfg: the given CA as the only trusted root when
// there is one (a private CA must not be diluted by the system's), the system roots
// otherwise; verification is skipped only when asked.
func clientTLS(cfg Config) (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // an explicit, documented opt-out
	if len(cfg.CACert) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CACert) {
			return nil, fmt.Errorf("opensearch client for %s: the CA bundle holds no PEM certificate", cfg.Endpoint)
		}
		t.RootCAs = pool
	}
	return t, nil
}

// observedTransport calls onRequest for every request it sends.
type observedTransport struct {
	next      http.RoundTripper
	onRequest func(SentRequest)
}

func (t observedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.onRequest != nil {
		sent := SentRequest{Method: r.Method, Path: r.URL.Path}
		if in, ok := settingsRule(r.Method, r.URL.Path); ok && r.GetBody != nil {
			if body, err := r.GetBody(); err == nil {
				raw, _ := io.ReadAll(body)
				sent.Settings = settingsIn(in, raw)
			}
		}
		t.onRequest(sent)
	}
	return t.next.RoundTrip(r)
}

// request is one REST call; it satisfies opensearch.Request.
type request struct {
	path   string
	body   []byte
	ndjson bool
}

func (r request) GetRequest(method string) (*http.Request, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequest(method, r.path, body)
	if err != nil {
		return nil, err
	}
	if r.body != nil {
		if r.ndjson {
			req.Header.Set("Content-Type", "application/x-ndjson")
		} else {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	return req, nil
}

// do sends one request and decodes a 2xx JSON answer into out (when out is not nil). Any
// other answer becomes an *APIError; a failure to get an answer becomes a TransportError.
func (c *Client) do(ctx context.Context, method, path string, body any, out any) error {
	var raw []byte
	ndjson := false
	switch b := body.(type) {
	case nil:
	case []byte:
		raw, ndjson = b, true
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			return fmt.Errorf("encoding %s %s: %w", method, path, err)
		}
	}
	// The body is read below, so the client is asked not to decode it (NoBody).
	resp, err := opensearch.Do(ctx, c.api, method, request{path: path, body: raw, ndjson: ndjson}, (*opensearch.NoBody)(nil))
	if err != nil {
		return &TransportError{Op: method + " " + redactPath(path), Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return &TransportError{Op: method + " " + redactPath(path), Err: err}
	}
	if resp.StatusCode >= 300 {
		return parseAPIError(resp.StatusCode, data)
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decoding %s %s: %w", method, path, err)
	}
	return nil
}

// redactPath drops a query string, which never carries secrets here but may be long.
func redactPath(p string) string {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		return p[:i]
	}
	return p
}
