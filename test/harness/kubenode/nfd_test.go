package kubenode

import "testing"

func TestNFDFeatureNames(t *testing.T) {
	for flag, want := range map[string]string{
		"avx2": "AVX2", "avx512f": "AVX512F", "avx512_fp16": "AVX512FP16", "avx512_bf16": "AVX512BF16",
		"avx512_vpopcntdq": "AVX512VPOPCNTDQ", "fma": "FMA3", "amx_tile": "AMXTILE", "sse4_2": "", "ht": "",
	} {
		got, ok := nfdFeature(flag)
		if got != want || ok != (want != "") {
			t.Errorf("%s → %q %v, want %q", flag, got, ok, want)
		}
	}
}
