package devenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Prometheus is a real Prometheus server (Debian's package) on a loopback port, scraping
// one target every second, with its data in a temporary folder.
type Prometheus struct {
	// URL is http://127.0.0.1:PORT.
	URL string
	dir string
	cmd *exec.Cmd
}

// StartPrometheus starts bin/prometheus scraping target (host:port, path /metrics) every
// second and evaluating the rule files every second.
func StartPrometheus(root, target string, ruleFiles ...string) (*Prometheus, error) {
	bin := filepath.Join(root, "bin", "prometheus")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("prometheus missing at %s: run hack/install-promtool.sh (make test does): %w", bin, err)
	}
	dir, err := os.MkdirTemp("", "vectorpilot-prometheus-*")
	if err != nil {
		return nil, err
	}
	p := &Prometheus{dir: dir}
	ok := false
	defer func() {
		if !ok {
			_ = p.Stop()
		}
	}()
	rules, err := json.Marshal(ruleFiles)
	if err != nil {
		return nil, err
	}
	config := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: %s
scrape_configs:
- job_name: vectorpilot
  static_configs: [{targets: [%q]}]
`, rules, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600); err != nil {
		return nil, err
	}
	port, err := FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	p.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	p.cmd = exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port))
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(p.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			return nil, fmt.Errorf("prometheus not ready on port %d: %v\n%s", port, err, out)
		}
	}
	ok = true
	return p, nil
}

// Sample is one series of an instant query's answer.
type Sample struct {
	Metric map[string]string
	Value  float64
}

// Query runs an instant PromQL query through the HTTP API.
func (p *Prometheus) Query(ctx context.Context, query string) ([]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/query?query="+url.QueryEscape(query), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("query %s: %w: %s", query, err, body)
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", query, answer.Error)
	}
	var out []Sample
	switch answer.Data.ResultType {
	case "vector":
		var series []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(answer.Data.Result, &series); err != nil {
			return nil, err
		}
		for _, s := range series {
			out = append(out, Sample{Metric: s.Metric, Value: parseValue(s.Value[1])})
		}
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(answer.Data.Result, &v); err != nil {
			return nil, err
		}
		out = append(out, Sample{Value: parseValue(v[1])})
	default:
		return nil, fmt.Errorf("query %s: result type %s", query, answer.Data.ResultType)
	}
	return out, nil
}

// Alert is one alert the server's rules hold.
type Alert struct {
	Labels map[string]string `json:"labels"`
	// State is pending or firing.
	State string `json:"state"`
}

// Alerts are the alerts the server's rules hold now.
func (p *Prometheus) Alerts(ctx context.Context) ([]Alert, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/alerts", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var answer struct {
		Data struct {
			Alerts []Alert `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return nil, err
	}
	return answer.Data.Alerts, nil
}

func parseValue(v any) float64 {
	s, _ := v.(string)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// Stop ends the server by PID and removes its data.
func (p *Prometheus) Stop() error {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		_, _ = p.cmd.Process.Wait()
	}
	return os.RemoveAll(p.dir)
}

// Log is the server's output.
func (p *Prometheus) Log() string {
	out, _ := os.ReadFile(filepath.Join(p.dir, "prometheus.log"))
	return string(out)
}
