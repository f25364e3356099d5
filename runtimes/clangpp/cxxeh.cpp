// C++ exceptions on WebAssembly exception handling, for the sysroot's libc++abi, which
// was built without them. Defines the ABI's throw/catch entry points, the landing-pad
// personality, the exception_ptr hooks, the default terminate handler and `_start`.
#include <cxxabi.h>
#include <unwind.h>
#include <exception>
#include <new>
#include <typeinfo>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// The tag every C++ exception is thrown with (libunwind defines it elsewhere).
__asm__(".globl __cpp_exception\n.tagtype __cpp_exception i32\n__cpp_exception:\n");

namespace __cxxabiv1 {

// libc++abi's base of all type_info classes; can_catch is its fourth virtual function.
struct __shim_type_info : std::type_info {
  ~__shim_type_info() override;
  virtual void noop1() const;
  virtual void noop2() const;
  virtual bool can_catch(const __shim_type_info *thrown, void *&adjusted) const = 0;
};

// Placed right before the thrown object ("primary"), or alone for a rethrown
// exception_ptr ("dependent": `primary` points at the thrown one).
struct __cxa_exception {
  __cxa_exception *primary;
  std::type_info *type;
  void *(*dtor)(void *);
  __cxa_exception *next;  // the stack of caught exceptions
  __cxa_exception *next_in_flight;
  int handlers;           // catch blocks it is in; negative while rethrown
  int refs;               // primary: throws in flight plus exception_ptrs
  void *adjusted;         // what the matched catch clause receives
  _Unwind_Exception unwind;
};

namespace {
constexpr uint64_t kClass = 0x434C4E47432B2B00;  // "CLNGC++\0"
constexpr uint64_t kDependent = kClass | 1;
__cxa_exception *caught;
// Thrown and not caught yet, latest first: what terminate reports, as a noexcept
// function's landing pad calls it without the exception.
__cxa_exception *in_flight;
unsigned uncaught;

__cxa_exception *from_unwind(void *u) {
  return reinterpret_cast<__cxa_exception *>(static_cast<char *>(u) - offsetof(__cxa_exception, unwind));
}
__cxa_exception *from_object(void *p) { return static_cast<__cxa_exception *>(p) - 1; }
bool native(const __cxa_exception *e) { return (e->unwind.exception_class & ~uint64_t(0xff)) == kClass; }
__cxa_exception *primary_of(__cxa_exception *e) { return e->primary ? e->primary : e; }
void *object_of(__cxa_exception *e) { return primary_of(e) + 1; }

void release(__cxa_exception *e) {
  if (e && --e->refs == 0) {
    if (e->dtor) e->dtor(e + 1);
    std::free(e);
  }
}
void cleanup(_Unwind_Reason_Code, _Unwind_Exception *u) {
  __cxa_exception *e = from_unwind(u);
  if (e->primary) {
    release(e->primary);
    std::free(e);
  } else {
    release(e);
  }
}
[[noreturn]] void raise(__cxa_exception *e) {
  ++uncaught;
  e->next_in_flight = in_flight;
  in_flight = e;
  __builtin_wasm_throw(0, &e->unwind);
}

// The DWARF encodings of a wasm LSDA (pointers are absolute).
uintptr_t uleb(const uint8_t *&p) {
  uintptr_t v = 0;
  unsigned shift = 0;
  uint8_t b;
  do {
    b = *p++;
    v |= uintptr_t(b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  return v;
}
intptr_t sleb(const uint8_t *&p) {
  uintptr_t v = 0;
  unsigned shift = 0;
  uint8_t b;
  do {
    b = *p++;
    v |= uintptr_t(b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  if ((b & 0x40) && shift < 8 * sizeof v) v |= ~uintptr_t(0) << shift;
  return intptr_t(v);
}
uintptr_t encoded(const uint8_t *&p, uint8_t enc) {
  if (enc == 0xff) return 0;
  uintptr_t v;
  switch (enc & 0x0f) {
    case 0x01: v = uleb(p); break;
    case 0x09: v = uintptr_t(sleb(p)); break;
    case 0x02: case 0x0a: { uint16_t x; std::memcpy(&x, p, 2); p += 2; v = x; break; }
    case 0x04: case 0x0c: { uint64_t x; std::memcpy(&x, p, 8); p += 8; v = uintptr_t(x); break; }
    default: { uint32_t x; std::memcpy(&x, p, 4); p += 4; v = x; break; }
  }
  return v;
}
const __shim_type_info *type_at(const uint8_t *class_info, uintptr_t index, uint8_t enc) {
  unsigned size = (enc & 7) == 2 ? 2 : (enc & 7) == 4 ? 8 : 4;
  const uint8_t *p = class_info - index * size;
  return reinterpret_cast<const __shim_type_info *>(encoded(p, enc));
}
}  // namespace

extern "C" {

// What the compiler's landing pads pass to and get from the personality.
struct _Unwind_LandingPadContext {
  uintptr_t lpad_index;
  uintptr_t lsda;
  uintptr_t selector;
} __wasm_lpad_context;

// Called by a landing pad with the caught exception: sets the selector to the index of
// the catch clause that takes it, or to 0 (a cleanup, or no clause matches).
_Unwind_Reason_Code _Unwind_CallPersonality(void *u) {
  __wasm_lpad_context.selector = 0;
  const uint8_t *p = reinterpret_cast<const uint8_t *>(__wasm_lpad_context.lsda);
  if (!p) return _URC_CONTINUE_UNWIND;
  __cxa_exception *e = from_unwind(u);
  uint8_t lp_enc = *p++;
  encoded(p, lp_enc);
  uint8_t type_enc = *p++;
  const uint8_t *class_info = nullptr;
  if (type_enc != 0xff) {
    uintptr_t off = uleb(p);
    class_info = p + off;
  }
  p++;  // call-site encoding: always uleb128 here
  uintptr_t table = uleb(p);
  const uint8_t *actions = p + table;
  uintptr_t action = 0;
  for (uintptr_t i = 0; i <= __wasm_lpad_context.lpad_index; i++) {
    uleb(p);
    action = uleb(p);
  }
  if (action == 0) return _URC_CONTINUE_UNWIND;
  const uint8_t *a = actions + action - 1;
  const __shim_type_info *thrown = native(e) ? static_cast<const __shim_type_info *>(e->type) : nullptr;
  for (;;) {
    intptr_t index = sleb(a);
    void *adjusted = native(e) ? object_of(e) : nullptr;
    bool match = false;
    if (index > 0) {
      const __shim_type_info *t = type_at(class_info, uintptr_t(index), type_enc);
      match = !t || (thrown && t->can_catch(thrown, adjusted));
    } else if (index < 0) {  // a dynamic exception specification: taken if none lists it
      const uint8_t *q = class_info + (-index - 1);
      match = true;
      while (uintptr_t i = uleb(q)) {
        void *tmp = adjusted;
        if (thrown && type_at(class_info, i, type_enc)->can_catch(thrown, tmp)) match = false;
      }
    }
    if (match) {
      if (native(e)) e->adjusted = adjusted;
      __wasm_lpad_context.selector = uintptr_t(index);
      return _URC_HANDLER_FOUND;
    }
    const uint8_t *next = a;
    intptr_t step = sleb(next);
    if (step == 0) return _URC_CONTINUE_UNWIND;
    a += step;
  }
}

_Unwind_Reason_Code _Unwind_RaiseException(_Unwind_Exception *u) { __builtin_wasm_throw(0, u); }

void _Unwind_DeleteException(_Unwind_Exception *u) {
  if (u->exception_cleanup) u->exception_cleanup(_URC_FOREIGN_EXCEPTION_CAUGHT, u);
}

void *__cxa_allocate_exception(size_t size) noexcept {
  size_t total = (sizeof(__cxa_exception) + size + 15) & ~size_t(15);
  void *p = std::aligned_alloc(16, total);
  if (!p) std::terminate();
  std::memset(p, 0, sizeof(__cxa_exception));
  return static_cast<__cxa_exception *>(p) + 1;
}

void __cxa_free_exception(void *object) noexcept { std::free(from_object(object)); }

__cxa_exception *__cxa_init_primary_exception(void *object, std::type_info *type, void *(*dtor)(void *)) noexcept {
  __cxa_exception *e = from_object(object);
  e->type = type;
  e->dtor = dtor;
  e->adjusted = object;
  e->unwind.exception_class = kClass;
  e->unwind.exception_cleanup = cleanup;
  return e;
}

void __cxa_throw(void *object, std::type_info *type, void *(*dtor)(void *)) {
  __cxa_exception *e = __cxa_init_primary_exception(object, type, dtor);
  e->refs = 1;
  raise(e);
}

void *__cxa_get_exception_ptr(void *u) noexcept {
  __cxa_exception *e = from_unwind(u);
  return native(e) ? e->adjusted : static_cast<_Unwind_Exception *>(u) + 1;
}

void *__cxa_begin_catch(void *u) noexcept {
  __cxa_exception *e = from_unwind(u);
  if (!native(e)) {  // not thrown by C++: nothing to keep but its presence
    if (caught) std::terminate();
    return static_cast<_Unwind_Exception *>(u) + 1;
  }
  for (__cxa_exception **p = &in_flight; *p; p = &(*p)->next_in_flight) {
    if (*p == e) {
      *p = e->next_in_flight;
      break;
    }
  }
  e->handlers = (e->handlers < 0 ? -e->handlers : e->handlers) + 1;
  if (e != caught) {
    e->next = caught;
    caught = e;
  }
  if (uncaught) --uncaught;
  return e->adjusted;
}

void __cxa_end_catch() {
  __cxa_exception *e = caught;
  if (!e) return;
  if (e->handlers < 0) {  // rethrown: it lives on
    if (++e->handlers == 0) caught = e->next;
  } else if (--e->handlers == 0) {
    caught = e->next;
    cleanup(_URC_FOREIGN_EXCEPTION_CAUGHT, &e->unwind);
  }
}

void __cxa_rethrow() {
  __cxa_exception *e = caught;
  if (!e) std::terminate();
  e->handlers = -e->handlers;
  raise(e);
}

std::type_info *__cxa_current_exception_type() { return caught ? caught->type : nullptr; }

void __cxa_call_terminate(void *u) noexcept {
  if (u) __cxa_begin_catch(u);
  std::terminate();
}

void __cxa_call_unexpected(void *u) { __cxa_call_terminate(u); }

bool __cxa_uncaught_exception() noexcept { return uncaught != 0; }
unsigned int __cxa_uncaught_exceptions() noexcept { return uncaught; }

// exception_ptr holds the thrown object of a primary exception.
void *__cxa_current_primary_exception() noexcept {
  if (!caught) return nullptr;
  __cxa_exception *p = primary_of(caught);
  ++p->refs;
  return p + 1;
}
void __cxa_increment_exception_refcount(void *object) noexcept {
  if (object) ++from_object(object)->refs;
}
void __cxa_decrement_exception_refcount(void *object) noexcept {
  if (object) release(from_object(object));
}
void __cxa_rethrow_primary_exception(void *object) {
  if (!object) return;
  __cxa_exception *p = from_object(object);
  auto *d = static_cast<__cxa_exception *>(std::aligned_alloc(16, sizeof(__cxa_exception)));
  if (!d) std::terminate();
  *d = *p;
  d->primary = p;
  d->next = nullptr;
  d->handlers = 0;
  d->adjusted = object;
  d->unwind.exception_class = kDependent;
  d->unwind.exception_cleanup = cleanup;
  ++p->refs;
  raise(d);
}

// The handlers, defined here instead of by libc++abi's cxa_default_handlers.
[[noreturn]] static void default_terminate();
std::terminate_handler __cxa_terminate_handler = default_terminate;
void (*__cxa_unexpected_handler)() = default_terminate;
std::new_handler __cxa_new_handler = nullptr;

}  // extern "C"

namespace {
// A readable name for common mangled types (fundamental, std::, plain and nested
// names, pointers to them); any other name stays mangled.
const char *const kFundamental[][2] = {
    {"v", "void"}, {"b", "bool"}, {"c", "char"}, {"a", "signed char"}, {"h", "unsigned char"},
    {"s", "short"}, {"t", "unsigned short"}, {"i", "int"}, {"j", "unsigned int"}, {"l", "long"},
    {"m", "unsigned long"}, {"x", "long long"}, {"y", "unsigned long long"}, {"f", "float"},
    {"d", "double"}, {"e", "long double"}, {"w", "wchar_t"}, {"Dn", "std::nullptr_t"}};

bool name_of(const char *&m, char *out, size_t cap) {
  auto put = [&](const char *s, size_t n) {
    size_t len = std::strlen(out);
    if (len + n >= cap) return false;
    std::memcpy(out + len, s, n);
    out[len + n] = 0;
    return true;
  };
  if (*m == 'P') {
    ++m;
    bool is_const = *m == 'K';
    if (is_const) ++m;
    return name_of(m, out, cap) && (!is_const || put(" const", 6)) && put("*", 1);
  }
  for (auto &f : kFundamental) {
    size_t n = std::strlen(f[0]);
    if (std::strncmp(m, f[0], n) == 0) {
      m += n;
      return put(f[1], std::strlen(f[1]));
    }
  }
  bool nested = *m == 'N';
  if (nested) ++m;
  bool first = true;
  if (m[0] == 'S' && m[1] == 't') {
    m += 2;
    if (!put("std", 3)) return false;
    first = false;
  }
  do {
    if (*m < '1' || *m > '9') return false;
    size_t n = std::strtoul(m, const_cast<char **>(&m), 10);
    if (std::strlen(m) < n || (!first && !put("::", 2)) || !put(m, n)) return false;
    m += n;
    first = false;
  } while (nested && *m != 'E');
  if (nested) ++m;
  return true;
}
}  // namespace

// The message libc++abi prints when built with exceptions, then the exit status of a
// process killed by SIGABRT, 134 (abort() would end the program as a crash).
[[noreturn]] static void default_terminate() {
  std::fflush(nullptr);
  __cxa_exception *e = in_flight ? in_flight : caught;
  if (e && native(e)) {
    const char *mangled = e->type->name();
    char name[256] = "";
    const char *m = mangled;
    if (std::strcmp(mangled, "NSt3__212basic_stringIcNS_11char_traitsIcEENS_9allocatorIcEEEE") == 0)
      std::strcpy(name, "std::string");
    else if (!name_of(m, name, sizeof name) || *m)
      std::snprintf(name, sizeof name, "%s", mangled);
    void *object = object_of(e);
    static const __shim_type_info *exception_type =
        static_cast<const __shim_type_info *>(&typeid(std::exception));
    if (exception_type->can_catch(static_cast<const __shim_type_info *>(e->type), object))
      std::fprintf(stderr, "libc++abi: terminating due to uncaught exception of type %s: %s\n", name,
                   static_cast<const std::exception *>(object)->what());
    else
      std::fprintf(stderr, "libc++abi: terminating due to uncaught exception of type %s\n", name);
  } else if (e) {
    std::fputs("libc++abi: terminating due to uncaught foreign exception\n", stderr);
  } else {
    std::fputs("libc++abi: terminating\n", stderr);
  }
  std::_Exit(134);
}

}  // namespace __cxxabiv1

namespace std {
terminate_handler set_terminate(terminate_handler h) noexcept {
  terminate_handler old = __cxxabiv1::__cxa_terminate_handler;
  __cxxabiv1::__cxa_terminate_handler = h ? h : __cxxabiv1::default_terminate;
  return old;
}
using unexpected_handler = void (*)();
unexpected_handler set_unexpected(unexpected_handler h) noexcept {
  unexpected_handler old = __cxxabiv1::__cxa_unexpected_handler;
  __cxxabiv1::__cxa_unexpected_handler = h ? h : __cxxabiv1::default_terminate;
  return old;
}
new_handler set_new_handler(new_handler h) noexcept {
  new_handler old = __cxxabiv1::__cxa_new_handler;
  __cxxabiv1::__cxa_new_handler = h;
  return old;
}
}  // namespace std

// libc++abi's operator new calls this when memory runs out (weak there: it aborts).
[[noreturn]] void __throw_bad_alloc_shim() { throw std::bad_alloc(); }

// The program's entry point, crt1-command.o's, except that an exception escaping main
// or a static constructor or destructor ends in std::terminate.
extern "C" void __wasi_init_tp();
extern "C" void __wasm_call_ctors();
extern "C" void __wasm_call_dtors();
extern "C" int __main_void();
extern "C" [[noreturn]] void __wasi_proc_exit(uint32_t);

extern "C" __attribute__((export_name("_start"))) void _start() noexcept {
  __wasi_init_tp();
  __wasm_call_ctors();
  int r = __main_void();
  __wasm_call_dtors();
  if (r != 0) __wasi_proc_exit(r);
}
