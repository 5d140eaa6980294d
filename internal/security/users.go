package security

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"golang.org/x/crypto/bcrypt"
	"sigs.k8s.io/yaml"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/managed"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// Users are the users the operator creates, each with its one security role.
var Users = []string{managed.AdminUser, managed.OperatorUser, managed.ProbeUser}

// Roles of the operator's users. all_access is the plugin's own static role.
const (
	adminRole    = "all_access"
	operatorRole = "vectorpilot_operator"
	probeRole    = "vectorpilot_probe"
)

var roleOf = map[string]string{managed.AdminUser: adminRole, managed.OperatorUser: operatorRole, managed.ProbeUser: probeRole}

// internalUsersFile is the internal user database among the configuration files.
const internalUsersFile = "internal_users.yml"

// bcryptCost is the internal user database's hash cost (the plugin's hash tool uses 12).
const bcryptCost = 12

// passwordAlphabet avoids characters that need quoting in shells, URLs and YAML.
const passwordAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// NewPassword is 32 characters from a 62-letter alphabet: 190 bits.
func NewPassword() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	for i := range b {
		// 256 = 4·62 + 8: the bias toward the first 8 letters is under 2 %, and each
		// password has 190 bits either way.
		b[i] = passwordAlphabet[int(b[i])%len(passwordAlphabet)]
	}
	return string(b), nil
}

// CredentialsDigest names a set of passwords without revealing them (they are random and
// long), so the configuration is re-rendered — and re-hashed, which is slow on purpose —
// only when one changed.
func CredentialsDigest(passwords map[string]string) string {
	h := sha256.New()
	for _, u := range slices.Sorted(func(yield func(string) bool) {
		for u := range passwords {
			if !yield(u) {
				return
			}
		}
	}) {
		fmt.Fprintf(h, "%s\x00%s\x00", u, passwords[u])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ConfigFiles are the security plugin's configuration files (config/opensearch-security)
// the security index is initialised from on the cluster's first start: HTTP basic
// authentication against the internal user database only, no anonymous access, the
// operator's users with their passwords bcrypt-hashed, and their roles. The operator's role
// is derived from the requests it sends (internal/opensearch's request table), as for
// external clusters. Only the plugin's required files are written; the optional ones
// (allowlist, audit, nodes_dn) keep the plugin's defaults.
func ConfigFiles(sc *v1alpha1.SearchCluster, passwords map[string]string) (map[string][]byte, error) {
	meta := func(t string) map[string]any { return map[string]any{"type": t, "config_version": 2} }
	users := map[string]any{"_meta": meta("internalusers")}
	for _, u := range Users {
		pw, ok := passwords[u]
		if !ok {
			return nil, fmt.Errorf("no password for user %s", u)
		}
		hash, err := bcrypt.GenerateFromPassword([]byte(pw), bcryptCost)
		if err != nil {
			return nil, err
		}
		users[u] = map[string]any{"hash": string(hash), "reserved": true,
			"description": fmt.Sprintf("vectorpilot: %s of SearchCluster %s/%s", u, sc.Namespace, sc.Name)}
	}
	cluster, index := opensearch.AllPermissions()
	roles := map[string]any{
		"_meta": meta("roles"),
		operatorRole: map[string]any{"reserved": true, "cluster_permissions": cluster,
			// Every index: a VectorIndex may name any index, and the plugin guards its own
			// system indexes separately.
			"index_permissions": []any{map[string]any{"index_patterns": []string{"*"}, "allowed_actions": index}}},
		probeRole: map[string]any{"reserved": true, "cluster_permissions": []string{"cluster:monitor/health"}},
	}
	mapping := map[string]any{"_meta": meta("rolesmapping")}
	for _, u := range Users {
		mapping[roleOf[u]] = map[string]any{"reserved": true, "users": []string{u}}
	}
	config := map[string]any{
		"_meta": meta("config"),
		"config": map[string]any{"dynamic": map[string]any{
			"http": map[string]any{"anonymous_auth_enabled": false, "xff": map[string]any{"enabled": false}},
			"authc": map[string]any{"basic_internal_auth_domain": map[string]any{
				"description":            "HTTP basic authentication against the internal user database",
				"http_enabled":           true,
				"transport_enabled":      true,
				"order":                  0,
				"http_authenticator":     map[string]any{"type": "basic", "challenge": true},
				"authentication_backend": map[string]any{"type": "intern"},
			}},
		}},
	}
	out := map[string][]byte{}
	for name, content := range map[string]any{
		"config.yml":        config,
		internalUsersFile:   users,
		"roles.yml":         roles,
		"roles_mapping.yml": mapping,
		"action_groups.yml": map[string]any{"_meta": meta("actiongroups")},
		"tenants.yml":       map[string]any{"_meta": meta("tenants")},
	} {
		b, err := yaml.Marshal(content)
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
	return out, nil
}

// PoolSpecs are the certificates of a pool's nodes: per pod a transport certificate
// (its subject admitted by nodes_dn) and an HTTP certificate for its and the client
// Service's names.
func PoolSpecs(sc *v1alpha1.SearchCluster, p v1alpha1.NodePool) []LeafSpec {
	var out []LeafSpec
	for _, pod := range managed.PodNames(sc, p) {
		cn, ou := managed.NodeSubject(sc, pod)
		out = append(out,
			LeafSpec{Key: managed.TransportKey(pod), CommonName: cn, OrganizationalUnit: ou, Hosts: managed.TransportHosts(sc, p.Name, pod)},
			LeafSpec{Key: managed.HTTPKey(pod), CommonName: cn, OrganizationalUnit: ou, Hosts: managed.HTTPHosts(sc, p.Name, pod)})
	}
	return out
}

// AdminSpec is the admin client certificate (tls.crt, tls.key), for securityadmin.sh.
func AdminSpec(sc *v1alpha1.SearchCluster) LeafSpec {
	cn, ou := managed.AdminSubject(sc)
	return LeafSpec{Key: "tls", CommonName: cn, OrganizationalUnit: ou, ClientOnly: true}
}

// InitialisedHashes are the password hashes of the operator's users in configuration files
// ConfigFiles rendered (the internal user database a cluster's security index is initialised
// from), by user; none when files hold none.
func InitialisedHashes(files map[string][]byte) map[string]string {
	var users map[string]struct {
		Hash string `json:"hash"`
	}
	if yaml.Unmarshal(files[internalUsersFile], &users) != nil {
		return nil
	}
	out := map[string]string{}
	for _, u := range Users {
		if h := users[u].Hash; h != "" {
			out[u] = h
		}
	}
	return out
}

// PasswordMatches says whether password is the one hash was made from.
func PasswordMatches(hash, password string) bool {
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
}
