package managed

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MaxMapCountPath is where the kernel exposes vm.max_map_count.
const MaxMapCountPath = "/proc/sys/vm/max_map_count"

// RaiseMaxMapCount raises the sysctl at path to MinMaxMapCount when it is lower and leaves a
// higher value alone; it returns the value before and after.
func RaiseMaxMapCount(path string) (before, after int, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	before, err = strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	if before >= MinMaxMapCount {
		return before, before, nil
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(MinMaxMapCount)), 0o644); err != nil {
		return before, before, err
	}
	return before, MinMaxMapCount, nil
}
