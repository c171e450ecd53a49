package envoy

// resetModule is the WebAssembly module (proxy-wasm ABI 0.2.1) of the filter
// that resets a stream: it resets every request it sees at its headers and
// holds them, so nothing of a response ever starts. Envoy has no filter that
// resets a stream by configuration (a local reply, an upstream reset or a
// timeout before the response reached the client all become an HTTP answer),
// and the Lua filter has no call for it. The module is this program,
// assembled here so that its bytes come from the source alone:
//
//	(module
//	  (import "env" "proxy_close_stream" (func $close (param i32) (result i32)))
//	  (memory (export "memory") 1)
//	  (func (export "proxy_abi_version_0_2_1"))
//	  ;; The host asks for memory only to pass data the module never asks for.
//	  (func (export "proxy_on_memory_allocate") (param i32) (result i32) (i32.const 1024))
//	  (func (export "proxy_on_context_create") (param i32 i32))
//	  ;; Close the request stream (type 0), then pause (1).
//	  (func (export "proxy_on_request_headers") (param i32 i32 i32) (result i32)
//	    (drop (call $close (i32.const 0)))
//	    (i32.const 1)))
func resetModule() []byte {
	const (
		i32, funcType                                          = 0x7f, 0x60
		typeSection, importSection, funcSection, memorySection = 1, 2, 3, 5
		exportSection, codeSection                             = 7, 10
		exportFunc, exportMemory, importFunc                   = 0, 2, 0
		opEnd, opI32Const, opCall, opDrop                      = 0x0b, 0x41, 0x10, 0x1a
		closeStream                                            = 0 // the imported function's index
	)
	signature := func(params, results int) []byte {
		return append(append([]byte{funcType}, wasmVec(wasmTypes(i32, params)...)...), wasmVec(wasmTypes(i32, results)...)...)
	}
	// Types: 0 (i32)->i32, 1 ()->(), 2 (i32 i32)->(), 3 (i32 i32 i32)->i32.
	types := [][]byte{signature(1, 1), signature(0, 0), signature(2, 0), signature(3, 1)}
	functions := []struct {
		name string
		typ  byte
		body []byte // without locals
	}{
		{"proxy_abi_version_0_2_1", 1, []byte{opEnd}},
		{"proxy_on_memory_allocate", 0, []byte{opI32Const, 0x80, 0x08, opEnd}}, // 1024, signed LEB128
		{"proxy_on_context_create", 2, []byte{opEnd}},
		{"proxy_on_request_headers", 3, []byte{opI32Const, 0, opCall, closeStream, opDrop, opI32Const, 1, opEnd}},
	}
	var funcTypes, exports, code [][]byte
	exports = append(exports, append(wasmName("memory"), exportMemory, 0))
	for i, f := range functions {
		funcTypes = append(funcTypes, []byte{f.typ})
		exports = append(exports, append(wasmName(f.name), exportFunc, byte(i+1))) // after the import
		body := append([]byte{0}, f.body...)                                       // no locals
		code = append(code, append(wasmUint(len(body)), body...))
	}
	module := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	for _, s := range []struct {
		id   byte
		body []byte
	}{
		{typeSection, wasmVec(types...)},
		{importSection, wasmVec(append(append(wasmName("env"), wasmName("proxy_close_stream")...), importFunc, 0))},
		{funcSection, wasmVec(funcTypes...)},
		{memorySection, wasmVec([]byte{0x00, 1})}, // one page, no maximum
		{exportSection, wasmVec(exports...)},
		{codeSection, wasmVec(code...)},
	} {
		module = append(append(append(module, s.id), wasmUint(len(s.body))...), s.body...)
	}
	return module
}

// wasmUint is n in unsigned LEB128, as WebAssembly writes sizes and counts.
func wasmUint(n int) []byte {
	var out []byte
	for {
		b := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

// wasmVec is a WebAssembly vector: its length, then its items.
func wasmVec(items ...[]byte) []byte {
	out := wasmUint(len(items))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

// wasmName is a WebAssembly name: its length, then its UTF-8 bytes.
func wasmName(s string) []byte { return append(wasmUint(len(s)), s...) }

// wasmTypes is n value types b, for wasmVec.
func wasmTypes(b byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte{b}
	}
	return out
}
