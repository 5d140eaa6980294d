package devenv

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Prometheus is a real Prometheus server (Debian's package) on a loopback port, scraping
// one target every second, with its data in a temporary folder.
type Prometheus struct {
	// URL is http://127.0.0.1:PORT.
	URL string
	// API is Prometheus's own Go client of the server's HTTP API.
	API promv1.API
	dir string
	cmd *exec.Cmd
}

// PrometheusScrapeInterval is how often StartPrometheus's server scrapes and evaluates.
const PrometheusScrapeInterval = time.Second

// StartPrometheus starts bin/prometheus scraping target (host:port, path /metrics) and
// evaluating the rule files every PrometheusScrapeInterval.
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
	config := fmt.Sprintf(`global: {scrape_interval: %s, evaluation_interval: %[1]s}
rule_files: %s
scrape_configs:
- job_name: vectorpilot
  static_configs: [{targets: [%q]}]
`, model.Duration(PrometheusScrapeInterval), rules, target)
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
	client, err := promapi.NewClient(promapi.Config{Address: p.URL})
	if err != nil {
		return nil, err
	}
	p.API = promv1.NewAPI(client)
	ok = true
	return p, nil
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
