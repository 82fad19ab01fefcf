package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The client driver: what the conformance suite's client scenarios run as
// their client ("--command"). It is this test binary again, with envDriver
// set; it writes an mcpd config whose one server is the suite's test server
// (its URL the last argument), starts mcpd, and performs the scenario
// through mcpd: through the bridge (mcpdctl bridge, with the Go SDK's
// client as the host) or, for the auth scenarios, through mcpdctl, logging
// in with "mcpdctl login --no-browser" and following the printed URL as a
// consenting browser would.
const (
	envDriver      = "CONFORMANCE_CLIENT_DRIVER"  // set: run as the driver
	envDriverMcpd  = "CONFORMANCE_DRIVER_MCPD"    // mcpd's binary
	envDriverCtl   = "CONFORMANCE_DRIVER_MCPDCTL" // mcpdctl's binary
	driverServer   = "remote"                     // the server's name in mcpd's config
	driverDeadline = 50 * time.Second             // the whole scenario; the suite's timeout is longer
)

// driver is one mcpd process the driver started, with its directory.
type driver struct {
	mcpd, ctl string
	dir       string
	socket    string
	cmd       *exec.Cmd
	waited    chan struct{} // closed when cmd.Wait returned
	log       syncBuffer    // mcpd's output (also on the driver's stderr)
}

// clientDriver runs the scenario in $MCP_CONFORMANCE_SCENARIO against the
// URL in args and returns the exit code.
func clientDriver(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "driver: want the server URL as the last argument")
		return 2
	}
	url := args[len(args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sctx map[string]any
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sctx); err != nil {
			fmt.Fprintf(os.Stderr, "driver: MCP_CONFORMANCE_CONTEXT: %v\n", err)
			return 2
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), driverDeadline)
	defer cancel()
	d, err := startDriver(ctx, url, scenario, sctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "driver: %v\n", err)
		return 1
	}
	defer os.RemoveAll(d.dir)
	err = d.perform(ctx, scenario, sctx)
	d.close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "driver: scenario %s: %v\n", scenario, err)
		return 1
	}
	if err := d.checkSecrets(); err != nil {
		fmt.Fprintf(os.Stderr, "driver: %v\n", err)
		return 1
	}
	return 0
}

// startDriver writes the config and starts mcpd, waiting until the server
// has left "starting".
func startDriver(ctx context.Context, url, scenario string, sctx map[string]any) (*driver, error) {
	d := &driver{mcpd: os.Getenv(envDriverMcpd), ctl: os.Getenv(envDriverCtl), waited: make(chan struct{})}
	if d.mcpd == "" || d.ctl == "" {
		return nil, fmt.Errorf("%s and %s must name mcpd and mcpdctl", envDriverMcpd, envDriverCtl)
	}
	dir, err := os.MkdirTemp("", "mcpd-cd") // short: the socket path has a length limit
	if err != nil {
		return nil, err
	}
	d.dir, d.socket = dir, filepath.Join(dir, "mcpd.sock")
	entry := map[string]any{"url": url, "type": "http", "autostart": true}
	if id, _ := sctx["client_id"].(string); id != "" {
		o := map[string]any{"clientId": id}
		if secret, _ := sctx["client_secret"].(string); secret != "" {
			o["clientSecret"] = secret
		}
		entry["oauth"] = o
	}
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{driverServer: entry}})
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("write config: %w", err)
	}
	d.cmd = exec.Command(d.mcpd, "--socket", d.socket, "--config", filepath.Join(dir, "config.json"),
		"--http-listen", "off", "--state-dir", filepath.Join(dir, "state"), "--log-level", "debug", "--log-format", "console")
	d.cmd.Env = driverEnv()
	out := io.MultiWriter(os.Stderr, &d.log) // the suite keeps the client's stderr
	d.cmd.Stdout, d.cmd.Stderr = out, out
	if err := d.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start mcpd: %w", err)
	}
	go func() { _ = d.cmd.Wait(); close(d.waited) }()
	if err := d.waitSettled(ctx); err != nil {
		d.close()
		os.RemoveAll(dir)
		return nil, err
	}
	return d, nil
}

// driverEnv is the environment without the driver's own variables.
func driverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CONFORMANCE_") && !strings.HasPrefix(kv, "MCPD_") {
			env = append(env, kv)
		}
	}
	return env
}

// close stops mcpd (SIGTERM, SIGKILL after a while); idempotent.
func (d *driver) close() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.waited:
	case <-time.After(20 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.waited
	}
}

// checkSecrets checks, once mcpd has stopped, that its credentials file
// (if a login made one) is private to the user and that no token or client
// secret in it appears in mcpd's debug log.
func (d *driver) checkSecrets() error {
	path := filepath.Join(d.dir, "state", "oauth.json")
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Perm() != 0o600 {
		return fmt.Errorf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var st struct {
		Clients []struct {
			ClientSecret string `json:"client_secret"`
		} `json:"clients"`
		Tokens []struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		} `json:"tokens"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var secrets []string
	for _, c := range st.Clients {
		secrets = append(secrets, c.ClientSecret)
	}
	for _, t := range st.Tokens {
		secrets = append(secrets, t.AccessToken, t.RefreshToken)
	}
	log := d.log.String()
	for _, s := range secrets {
		if len(s) >= 8 && strings.Contains(log, s) {
			return fmt.Errorf("a secret from %s (%d bytes) appears in mcpd's debug log", path, len(s))
		}
	}
	return nil
}

// waitSettled waits until mcpd answers and the server is no longer starting.
func (d *driver) waitSettled(ctx context.Context) error {
	var last string
	for {
		out, err := d.ctlOutput(ctx, "status", "--json")
		if err == nil {
			var st struct {
				Servers []struct {
					Name  string `json:"name"`
					State string `json:"state"`
				} `json:"servers"`
			}
			if jerr := json.Unmarshal([]byte(out), &st); jerr == nil {
				for _, s := range st.Servers {
					if s.Name == driverServer && s.State != "" && s.State != "starting" && s.State != "stopped" {
						return nil
					}
				}
			}
		}
		last = out
		select {
		case <-d.waited:
			return errors.New("mcpd exited")
		case <-ctx.Done():
			return fmt.Errorf("server %s did not settle: %w; last status: %s", driverServer, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ctlOutput runs mcpdctl with args and returns its combined output.
func (d *driver) ctlOutput(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, d.ctl, append([]string{"--socket", d.socket}, args...)...)
	cmd.Env = driverEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("mcpdctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// maxLogins bounds the logins of one auth scenario (step-up asks for a
// second; the retry-limit scenario wants a client that gives up).
const maxLogins = 3

// authScenario lists the tools and calls test-tool through mcpdctl,
// logging in whenever mcpd says a login is required.
func (d *driver) authScenario(ctx context.Context) error {
	logins := 0
	for _, step := range [][]string{{"tools", driverServer, "--json"}, {"call", driverServer, "test-tool", "{}"}} {
		for {
			out, err := d.ctlOutput(ctx, step...)
			if err == nil {
				break
			}
			if !strings.Contains(out, "mcpdctl login") {
				return err
			}
			if logins == maxLogins {
				return fmt.Errorf("still unauthorized after %d logins: %w", logins, err)
			}
			logins++
			if err := d.login(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// login runs "mcpdctl login --no-browser", opens the URL it prints with an
// HTTP client (the suite's authorization server redirects straight back to
// mcpd) and waits for mcpdctl to report the login done.
func (d *driver) login(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, d.ctl, "--socket", d.socket, "login", driverServer, "--no-browser")
	cmd.Env = driverEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("mcpdctl login: %w", err)
	}
	line, rerr := bufio.NewReader(stdout).ReadString('\n')
	if rerr != nil {
		werr := cmd.Wait()
		return fmt.Errorf("mcpdctl login printed no URL (%v): %w: %s", rerr, werr, stderr.String())
	}
	u := strings.TrimSpace(line)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	if err := browse(ctx, u); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("mcpdctl login: %w: %s", err, stderr.String())
	}
	fmt.Fprintf(os.Stderr, "driver: logged in: %s", stderr.String())
	return nil
}

// browse GETs u and follows its redirects, as a browser whose user consents.
func browse(ctx context.Context, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("authorization URL %q: %w", u, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("open the authorization URL: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("authorization URL ended at %s: %s: %s", resp.Request.URL.Redacted(), resp.Status, body)
	}
	return nil
}
