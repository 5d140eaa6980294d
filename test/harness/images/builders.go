package images

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/vectorpilot/vectorpilot/internal/harness/devenv"
)

// Refs of the images the real node runs. They name no registry anyone could pull from: pods
// use them with imagePullPolicy IfNotPresent after the harness imported them.
const (
	OperatorRef   = "vectorpilot.local/vectorpilot:dev"
	PauseRef      = "vectorpilot.local/pause:3.10"
	OpenSearchTag = "vectorpilot.local/opensearch-e2e"
	// ArgoRepository prefixes the Argo Workflows images (ArgoRef).
	ArgoRepository = "vectorpilot.local/argoproj/"
	// PrometheusOperatorRepository prefixes the Prometheus Operator's images (operator,
	// prometheus-config-reloader), PrometheusRepository the Prometheus server's, as quay.io's
	// prometheus-operator/ and prometheus/ do.
	PrometheusOperatorRepository = "vectorpilot.local/prometheus-operator/"
	PrometheusRepository         = "vectorpilot.local/prometheus/"
)

// ArgoRef is the ref of one of Argo Workflows' images (workflow-controller, argoexec) at a
// version.
func ArgoRef(binary, version string) string { return ArgoRepository + binary + ":" + version }

// Dockerfile is what the builder reads from the repository's Dockerfile: the Go build
// command of the build stage and the final stage's file, user and start command. The
// Dockerfile stays the one definition of the operator image.
type Dockerfile struct {
	// BuildCommand is the build stage's `go build` RUN line.
	BuildCommand string
	// CopyFrom and CopyTo are the final stage's COPY --from=<build stage> source and target.
	CopyFrom, CopyTo string
	User             string
	Entrypoint, Cmd  []string
}

// ParseDockerfile reads the instructions the operator image is made of.
func ParseDockerfile(path string) (Dockerfile, error) {
	f, err := os.Open(path)
	if err != nil {
		return Dockerfile{}, err
	}
	defer f.Close()
	var (
		out    Dockerfile
		stages []string
		line   string
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "#") {
			continue
		}
		if strings.HasSuffix(text, "\\") {
			line += strings.TrimSuffix(text, "\\") + " "
			continue
		}
		line += text
		instr, args, _ := strings.Cut(line, " ")
		args = strings.TrimSpace(args)
		line = ""
		switch strings.ToUpper(instr) {
		case "FROM":
			stage := args
			if _, as, ok := strings.Cut(strings.ToUpper(args), " AS "); ok {
				stage = strings.ToLower(strings.TrimSpace(as))
			}
			stages = append(stages, stage)
		case "RUN":
			if strings.Contains(args, "go build") {
				out.BuildCommand = args
			}
		case "COPY":
			if rest, ok := strings.CutPrefix(args, "--from="); ok {
				fields := strings.Fields(rest)
				if len(fields) != 3 {
					return out, fmt.Errorf("%s: COPY %s: want --from=<stage> <source> <target>", path, args)
				}
				out.CopyFrom, out.CopyTo = fields[1], fields[2]
			}
		case "USER":
			out.User = args
		case "ENTRYPOINT", "CMD":
			var list []string
			if err := json.Unmarshal([]byte(args), &list); err != nil {
				return out, fmt.Errorf("%s: %s must be in JSON (exec) form: %w", path, instr, err)
			}
			if strings.EqualFold(instr, "ENTRYPOINT") {
				out.Entrypoint = list
			} else {
				out.Cmd = list
			}
		}
	}
	if err := sc.Err(); err != nil {
		return out, err
	}
	if len(stages) < 2 || out.BuildCommand == "" || out.CopyFrom == "" || out.User == "" || len(out.Entrypoint) == 0 {
		return out, fmt.Errorf("%s: want a build stage with `RUN … go build -o <file>` and a final stage with COPY --from, USER and ENTRYPOINT", path)
	}
	return out, nil
}

// Operator builds the operator image as the repository's Dockerfile describes it: its Go
// build command (output redirected into work), on a base carrying what the Dockerfile's
// distroless/static:nonroot base gives a static binary (passwd entries, CA certificates, /tmp).
func Operator(root, work string) (Image, error) {
	df, err := ParseDockerfile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		return Image{}, err
	}
	outDir := filepath.Dir(df.CopyFrom)
	binary := filepath.Join(work, "operator", filepath.Base(df.CopyFrom))
	if err := os.MkdirAll(filepath.Dir(binary), 0o755); err != nil {
		return Image{}, err
	}
	build := strings.ReplaceAll(df.BuildCommand, outDir+"/", filepath.Dir(binary)+"/")
	cmd := exec.Command("sh", "-c", build)
	cmd.Dir = root
	// The module alone, as in the Dockerfile's build stage (an older commit's tree is in
	// no workspace).
	cmd.Env = devenv.OutsideWorkspace()
	if out, err := cmd.CombinedOutput(); err != nil {
		return Image{}, fmt.Errorf("%s: %w\n%s", build, err, out)
	}
	base, err := nonrootBase(work)
	if err != nil {
		return Image{}, err
	}
	layer := filepath.Join(work, "operator.tar")
	if err := WriteLayer(layer, Tree{Source: binary, Target: df.CopyTo, Mode: 0o755}); err != nil {
		return Image{}, err
	}
	return Image{Ref: OperatorRef, Layers: []string{base, layer}, Config: v1.Config{
		User: df.User, Entrypoint: df.Entrypoint, Cmd: df.Cmd,
		Env: nonrootEnv,
	}}, nil
}

// nonrootEnv is the environment distroless/static sets.
var nonrootEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}

// nonrootBase is the layer in place of distroless/static:nonroot.
func nonrootBase(work string) (string, error) {
	dir := filepath.Join(work, "nonroot-base")
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
		"etc/group":  "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n",
	}
	for p, content := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	for _, d := range []string{"tmp", "home/nonroot"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return "", err
		}
	}
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o1777|os.ModeSticky); err != nil {
		return "", err
	}
	layer := filepath.Join(work, "nonroot-base.tar")
	err := WriteLayer(layer,
		Tree{Source: filepath.Join(dir, "etc"), Target: "etc", Owner: &Owner{}},
		Tree{Source: filepath.Join(dir, "tmp"), Target: "tmp", Owner: &Owner{}},
		Tree{Source: filepath.Join(dir, "home"), Target: "home", Owner: &Owner{UID: 65532, GID: 65532}},
		Tree{Source: "/etc/ssl/certs/ca-certificates.crt", Target: "etc/ssl/certs/ca-certificates.crt", Owner: &Owner{}},
	)
	return layer, err
}

// Static builds the image of one static Go binary as the Argo Workflows and Prometheus
// projects' Dockerfiles do: the binary at /bin/<name>, owned by and run as uid, on the base
// distroless/static gives (passwd, CA certificates, /tmp), the binary as entrypoint.
func Static(work, binary, ref string, uid int) (Image, error) {
	base, err := nonrootBase(work)
	if err != nil {
		return Image{}, err
	}
	name := filepath.Base(binary)
	layer := filepath.Join(work, name+".tar")
	if err := WriteLayer(layer, Tree{Source: binary, Target: "bin/" + name, Owner: &Owner{UID: uid}, Mode: 0o755}); err != nil {
		return Image{}, err
	}
	return Image{Ref: ref, Layers: []string{base, layer}, Config: v1.Config{
		User: strconv.Itoa(uid), Entrypoint: []string{name},
		Env: nonrootEnv,
	}}, nil
}

// ArgoUID is the user upstream's Argo Workflows images run as; NobodyUID the one the
// Prometheus and Prometheus Operator images run as.
const (
	ArgoUID   = 8737
	NobodyUID = 65534
)

// Pause builds the sandbox image: hack/images/pause.c compiled static, alone in its image.
func Pause(root, work string) (Image, error) {
	binary := filepath.Join(work, "pause")
	if out, err := exec.Command("gcc", "-static", "-O2", "-o", binary, filepath.Join(root, "hack", "images", "pause.c")).CombinedOutput(); err != nil {
		return Image{}, fmt.Errorf("gcc -static pause.c: %w\n%s", err, out)
	}
	layer := filepath.Join(work, "pause.tar")
	if err := WriteLayer(layer, Tree{Source: binary, Target: "pause", Owner: &Owner{}, Mode: 0o755}); err != nil {
		return Image{}, err
	}
	return Image{Ref: PauseRef, Layers: []string{layer}, Config: v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"}}, nil
}

// OpenSearchInputs are the parts the OpenSearch test image is assembled from.
type OpenSearchInputs struct {
	// RootFS is a Debian minbase root filesystem (hack/install-node.sh makes it).
	RootFS string
	// Home is the OpenSearch distribution with k-NN and repository-s3 (hack/install-opensearch.sh).
	Home string
	// JDK is the Java runtime placed at /usr/share/opensearch/jdk.
	JDK string
	// Version tags the image.
	Version string
}

// OpenSearch builds an image laid out like the official opensearchproject/opensearch image:
// the distribution in /usr/share/opensearch owned by uid/gid 1000, the JDK in its jdk/,
// hack/images/opensearch-docker-entrypoint.sh as entrypoint, "opensearch" as command. It
// carries hack/images/nofile-shim.c preloaded, so it is a test image only (see the shim).
func OpenSearch(root, work string, in OpenSearchInputs) (Image, error) {
	shim := filepath.Join(work, "libnofile-shim.so")
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-O2", "-o", shim, filepath.Join(root, "hack", "images", "nofile-shim.c"), "-ldl").CombinedOutput(); err != nil {
		return Image{}, fmt.Errorf("gcc nofile-shim.c: %w\n%s", err, out)
	}
	etc := filepath.Join(work, "opensearch-etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		return Image{}, err
	}
	passwd, err := os.ReadFile(filepath.Join(in.RootFS, "etc", "passwd"))
	if err != nil {
		return Image{}, err
	}
	group, err := os.ReadFile(filepath.Join(in.RootFS, "etc", "group"))
	if err != nil {
		return Image{}, err
	}
	if err := os.WriteFile(filepath.Join(etc, "passwd"), append(passwd, "opensearch:x:1000:1000:opensearch:/usr/share/opensearch:/bin/bash\n"...), 0o644); err != nil {
		return Image{}, err
	}
	if err := os.WriteFile(filepath.Join(etc, "group"), append(group, "opensearch:x:1000:\n"...), 0o644); err != nil {
		return Image{}, err
	}
	const home = "usr/share/opensearch"
	opensearch := &Owner{UID: 1000, GID: 1000}
	layers := map[string][]Tree{
		"opensearch-rootfs.tar": {{Source: in.RootFS, Target: "/"}},
		"opensearch-jdk.tar":    {{Source: in.JDK, Target: home + "/jdk", Owner: &Owner{}}},
		"opensearch-home.tar": {
			{Source: filepath.Join(etc, "passwd"), Target: "etc/passwd", Owner: &Owner{}},
			{Source: filepath.Join(etc, "group"), Target: "etc/group", Owner: &Owner{}},
			{Source: in.Home, Target: home, Owner: opensearch},
			{Source: filepath.Join(root, "hack", "images", "opensearch-docker-entrypoint.sh"), Target: home + "/opensearch-docker-entrypoint.sh", Owner: opensearch, Mode: 0o755},
			// The official image's keystore CLI, which Maven Central does not publish.
			{Source: filepath.Join(root, "hack", "opensearch", "opensearch-keystore"), Target: home + "/bin/opensearch-keystore", Owner: opensearch, Mode: 0o755},
			{Source: filepath.Join(root, "hack", "opensearch", "Keystore.java"), Target: home + "/bin/Keystore.java", Owner: opensearch, Mode: 0o644},
			{Source: shim, Target: "usr/local/lib/vectorpilot-e2e/libnofile-shim.so", Owner: &Owner{}, Mode: 0o755},
		},
	}
	// A k-NN library that links what the image lacks fails only when a node first loads it
	// (an UnsatisfiedLinkError, then a crash loop), so the build refuses such an image.
	knnLib := "/" + home + "/plugins/opensearch-knn/lib"
	tree := imageFS{{"/", in.RootFS}, {"/" + home, in.Home}, {"/" + home + "/jdk", in.JDK}}
	if _, err := os.Stat(tree.host(knnLib)); err == nil {
		missing, err := tree.unresolvedLibraries(knnLib, []string{knnLib})
		if err != nil {
			return Image{}, err
		}
		if len(missing) > 0 {
			return Image{}, fmt.Errorf("the k-NN native libraries would not load in the image:\n%s", strings.Join(missing, "\n"))
		}
	}
	var paths []string
	for _, name := range []string{"opensearch-rootfs.tar", "opensearch-jdk.tar", "opensearch-home.tar"} {
		path := filepath.Join(work, name)
		if err := WriteLayer(path, layers[name]...); err != nil {
			return Image{}, err
		}
		paths = append(paths, path)
	}
	return Image{Ref: OpenSearchTag + ":" + in.Version, Layers: paths, Config: v1.Config{
		User:       "1000:1000",
		WorkingDir: "/" + home,
		Entrypoint: []string{"./opensearch-docker-entrypoint.sh"},
		Cmd:        []string{"opensearch"},
		Env: []string{
			"PATH=/usr/share/opensearch/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"LD_PRELOAD=/usr/local/lib/vectorpilot-e2e/libnofile-shim.so",
			// Where the k-NN engines' native libraries are, as the official image sets it.
			"LD_LIBRARY_PATH=" + knnLib,
		},
	}}, nil
}
