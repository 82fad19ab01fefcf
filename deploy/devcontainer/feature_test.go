// Package devcontainer holds mcpd's devcontainer feature (mcpd/); its
// tests check the feature's metadata against the devcontainer feature
// schema and run its install.sh in a scratch root.
package devcontainer

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The feature's directory; the feature's id must be its name.
const featureDir = "mcpd"

// featureKeys are the properties devContainerFeature.schema.json allows
// (devcontainers/spec, schemas/devContainerFeature.schema.json: the
// Feature definition has additionalProperties false).
var featureKeys = []string{
	"capAdd", "containerEnv", "customizations", "description", "documentationURL", "entrypoint",
	"id", "init", "installsAfter", "licenseURL", "mounts", "name", "options", "privileged",
	"securityOpt", "version", "legacyIds", "deprecated", "onCreateCommand", "updateContentCommand",
	"postCreateCommand", "postStartCommand", "postAttachCommand",
}

// semver is the shape of the feature's version (Semantic Versioning 2.0).
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// feature is what the tests read of devcontainer-feature.json.
type feature struct {
	ID           string                     `json:"id"`
	Version      string                     `json:"version"`
	Name         string                     `json:"name"`
	Options      map[string]json.RawMessage `json:"options"`
	Mounts       []json.RawMessage          `json:"mounts"`
	ContainerEnv map[string]string          `json:"containerEnv"`
}

func readFeature(t *testing.T) (feature, map[string]json.RawMessage) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(featureDir, "devcontainer-feature.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatalf("devcontainer-feature.json: %v", err)
	}
	var f feature
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("devcontainer-feature.json: %v", err)
	}
	return f, raw
}

// TestFeatureSchema checks devcontainer-feature.json as the schema does:
// only known properties; id, version and name present (the schema
// requires id and version, the spec's reference name too); each option
// one of the schema's three shapes; each mount type, source and target
// only; containerEnv strings.
func TestFeatureSchema(t *testing.T) {
	f, raw := readFeature(t)
	for k := range raw {
		if !slices.Contains(featureKeys, k) {
			t.Errorf("property %q is not in the feature schema", k)
		}
	}
	if f.ID != featureDir {
		t.Errorf("id %q, want the directory's name %q", f.ID, featureDir)
	}
	if !semver.MatchString(f.Version) {
		t.Errorf("version %q is not semver", f.Version)
	}
	if f.Name == "" {
		t.Error("no name")
	}
	for name, o := range f.Options {
		var opt map[string]any
		if err := json.Unmarshal(o, &opt); err != nil {
			t.Errorf("option %s: %v", name, err)
			continue
		}
		if err := checkOption(opt); err != "" {
			t.Errorf("option %s: %s", name, err)
		}
	}
	if len(f.Mounts) == 0 {
		t.Error("no mounts: the host's socket directory must be mounted")
	}
	for i, m := range f.Mounts {
		var mount map[string]any
		if err := json.Unmarshal(m, &mount); err != nil {
			t.Errorf("mount %d: %v", i, err)
			continue
		}
		for k := range mount {
			if k != "type" && k != "source" && k != "target" {
				t.Errorf("mount %d: property %q is not in the schema", i, k)
			}
		}
		typ, _ := mount["type"].(string)
		src, _ := mount["source"].(string)
		dst, _ := mount["target"].(string)
		if typ != "bind" && typ != "volume" || src == "" || dst == "" {
			t.Errorf("mount %d: %v, want type bind|volume, source and target", i, mount)
		}
	}
	// The mount is the host user's mcpd socket directory, and
	// MCPD_SOCKET names the socket in it.
	var mount struct{ Type, Source, Target string }
	if len(f.Mounts) > 0 {
		json.Unmarshal(f.Mounts[0], &mount)
	}
	if mount.Type != "bind" || mount.Source != "${localEnv:XDG_RUNTIME_DIR}/mcpd" {
		t.Errorf("mount %+v, want a bind of ${localEnv:XDG_RUNTIME_DIR}/mcpd", mount)
	}
	if got, want := f.ContainerEnv["MCPD_SOCKET"], mount.Target+"/mcpd.sock"; got != want {
		t.Errorf("containerEnv MCPD_SOCKET %q, want %q (the mounted directory's socket)", got, want)
	}
}

// checkOption is the schema's FeatureOption: a boolean with a boolean
// default, or a string with a string default and an enum or proposals.
func checkOption(opt map[string]any) string {
	allowed := []string{"type", "default", "description"}
	switch opt["type"] {
	case "boolean":
		if _, ok := opt["default"].(bool); !ok {
			return "a boolean option needs a boolean default"
		}
	case "string":
		if _, ok := opt["default"].(string); !ok {
			return "a string option needs a string default"
		}
		if _, ok := opt["enum"]; ok {
			allowed = append(allowed, "enum")
		} else {
			allowed = append(allowed, "proposals")
		}
	default:
		return "type must be boolean or string"
	}
	for k := range opt {
		if !slices.Contains(allowed, k) {
			return "property " + k + " is not allowed here"
		}
	}
	return ""
}

// install runs install.sh from dir in the scratch root root with the
// given options (as the devcontainer CLI passes them: upper-case names).
func install(t *testing.T, dir, root string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("sh", filepath.Join(dir, "install.sh"))
	cmd.Env = append(os.Environ(), append([]string{"MCPD_FEATURE_ROOT=" + root}, env...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// copyFeature copies the feature's files into a fresh directory, as the
// devcontainer CLI does before running install.sh.
func copyFeature(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"devcontainer-feature.json", "install.sh"} {
		data, err := os.ReadFile(filepath.Join(featureDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkProfile checks the profile script install.sh wrote sets, in a
// login shell, the environment the feature's containerEnv declares.
func checkProfile(t *testing.T, root string, f feature) {
	t.Helper()
	script := filepath.Join(root, "etc", "profile.d", "mcpd.sh")
	for name, want := range f.ContainerEnv {
		cmd := exec.Command("sh", "-c", `. "$1" && printf %s "$(printenv "$2")"`, "sh", script, name)
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != want {
			t.Errorf("%s after sourcing %s: %q (%v), want %q", name, script, out, err, want)
		}
	}
}

// TestInstallFromFeatureDir: a prebuilt mcpdctl shipped in the feature's
// directory is installed in installPath, and it runs there.
func TestInstallFromFeatureDir(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mcpdctl")
	}
	f, _ := readFeature(t)
	dir := copyFeature(t)
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "mcpdctl"), "github.com/mcpd-dev/mcpd/cmd/mcpdctl")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build mcpdctl: %v\n%s", err, out)
	}
	root := t.TempDir()
	if out, err := install(t, dir, root, "INSTALLPATH=/opt/mcpd/bin"); err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	bin := filepath.Join(root, "opt", "mcpd", "bin", "mcpdctl")
	fi, err := os.Stat(bin)
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("installed mcpdctl: %v %v", fi, err)
	}
	// In the container, with no host mcpd behind the mount, it says so
	// about the socket the feature declares.
	cmd := exec.Command(bin, "status")
	cmd.Env = append(os.Environ(), "MCPD_SOCKET="+f.ContainerEnv["MCPD_SOCKET"])
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), f.ContainerEnv["MCPD_SOCKET"]) {
		t.Errorf("installed mcpdctl status: %v\n%s", err, out)
	}
	checkProfile(t, root, f)
}

// TestInstallBinaryOption: the binary option names the prebuilt mcpdctl,
// which wins over one in the feature's directory.
func TestInstallBinaryOption(t *testing.T) {
	f, _ := readFeature(t)
	dir := copyFeature(t)
	if err := os.WriteFile(filepath.Join(dir, "mcpdctl"), []byte("#!/bin/sh\necho feature-dir\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	prebuilt := filepath.Join(t.TempDir(), "mcpdctl-linux-amd64")
	if err := os.WriteFile(prebuilt, []byte("#!/bin/sh\necho option\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if out, err := install(t, dir, root, "BINARY="+prebuilt); err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(root, "usr", "local", "bin", "mcpdctl")).Output()
	if err != nil || string(out) != "option\n" {
		t.Errorf("installed mcpdctl printed %q (%v), want the binary option's", out, err)
	}
	checkProfile(t, root, f)
}

// TestInstallGo: with no prebuilt mcpdctl, install.sh runs go install of
// the version option into installPath (a stand-in go records it).
func TestInstallGo(t *testing.T) {
	dir := copyFeature(t)
	fakeBin := t.TempDir()
	fakeGo := `#!/bin/sh
echo "$GOBIN $*" >"$GOBIN/go-args"
printf '#!/bin/sh\n' >"$GOBIN/mcpdctl"
chmod 0755 "$GOBIN/mcpdctl"
`
	if err := os.WriteFile(filepath.Join(fakeBin, "go"), []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	out, err := install(t, dir, root, "VERSION=v1.2.3", "PATH="+fakeBin+":/usr/bin:/bin", "MCPD_FEATURE_GO=/nonexistent")
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	args, err := os.ReadFile(filepath.Join(root, "usr", "local", "bin", "go-args"))
	want := filepath.Join(root, "usr", "local", "bin") + " install github.com/mcpd-dev/mcpd/cmd/mcpdctl@v1.2.3\n"
	if err != nil || string(args) != want {
		t.Errorf("go was run as %q (%v), want %q", args, err, want)
	}
}

// TestInstallNothingToInstall: no prebuilt mcpdctl and no Go is a clear
// failure, not an image without mcpdctl.
func TestInstallNothingToInstall(t *testing.T) {
	dir := copyFeature(t)
	empty := t.TempDir()
	for _, tool := range []string{"dirname", "mkdir"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skip(tool, " not found")
		}
		if err := os.Symlink(p, filepath.Join(empty, tool)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := install(t, dir, t.TempDir(), "PATH="+empty, "MCPD_FEATURE_GO="+filepath.Join(empty, "go"))
	if err == nil || !strings.Contains(out, "no prebuilt mcpdctl") {
		t.Errorf("install.sh without mcpdctl or Go: %v\n%s", err, out)
	}
}
