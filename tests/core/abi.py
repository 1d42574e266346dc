#!/usr/bin/env python3
# The ABI rule (docs/design.md, "ABI"): every symbol an installed library
# exports is declared in one of its installed headers, every function an
# installed header marks with the library's export macro is exported, and a
# plugin exports only its descriptor (gst_plugin_NAME_get_desc/_register),
# and the Python binding's ctypes prototypes name only exported functions.
# Every declaration an installed header marks with the export macro says in
# the comment right above it which release gave it (`Since:`, issue 31).
#
# Usage (tests/core/meson.build):
#   abi.py --lib LIB.so MACRO HEADER... [--lib ...] [--plugin PLUGIN.so ...]
#          [--binding _native.py LIB.so]
# Exits 1 listing every violation.
import re
import subprocess
import sys

# Symbols the linker defines in every shared object.
LINKER_SYMBOLS = {'_init', '_fini', '_edata', '_end', '__bss_start'}


def exported(path):
    out = subprocess.run(['nm', '-D', '--defined-only', path], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            names.add(fields[2].split('@')[0])
    return names - LINKER_SYMBOLS


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    return re.sub(r'//[^\n]*', ' ', text)


def declared(headers, macro):
    """(every name an installed header declares, the names it marks with
    macro): functions, and the _get_type of G_DECLARE_*_TYPE."""
    names, marked = set(), set()
    for h in headers:
        text = strip_comments(open(h, encoding='utf-8').read())
        # join preprocessor continuation lines, drop #define bodies
        text = re.sub(r'\\\n', ' ', text)
        text = re.sub(r'^\s*#[^\n]*', ' ', text, flags=re.M)
        text = re.sub(r'extern\s*"C"\s*\{|\bG_(BEGIN|END)_DECLS\b', ' ', text)
        # G_DECLARE_*_TYPE (...) ends without a semicolon: give it one
        text = re.sub(r'(G_DECLARE_\w+\s*\([^()]*\))', r'\1;', text)
        for stmt in text.split(';'):
            stmt = ' '.join(stmt.split())
            for m in re.finditer(
                    r'G_DECLARE_(?:FINAL|DERIVABLE|INTERFACE)_TYPE\s*\(\s*\w+\s*,\s*(\w+)',
                    stmt):
                name = m.group(1) + '_get_type'
                names.add(name)
                if re.search(r'\b%s\s+G_DECLARE_' % macro, stmt):
                    marked.add(name)
            if 'G_DECLARE_' in stmt:
                continue
            # a prototype: "... name (args)" with no body in the statement
            m = re.search(r'\b([A-Za-z_]\w*)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*$',
                          stmt)
            if not m or '{' in stmt or stmt.startswith('typedef'):
                continue
            name = m.group(1)
            names.add(name)
            if re.search(r'(^|[\s}])%s\b' % macro, stmt):
                marked.add(name)
    return names, marked


def undated(headers, macro):
    """'header:line' of each declaration marked with macro whose comment
    right above (no blank line between) says no `Since:`."""
    bad = []
    for h in headers:
        lines = open(h, encoding='utf-8').read().split('\n')
        for n, line in enumerate(lines):
            if not re.match(r'%s\b' % macro, line):
                continue
            k = n - 1
            if k < 0 or not lines[k].rstrip().endswith('*/'):
                bad.append('%s:%d' % (h, n + 1))
                continue
            while k > 0 and '/*' not in lines[k]:
                k -= 1
            if 'Since:' not in '\n'.join(lines[k:n]):
                bad.append('%s:%d' % (h, n + 1))
    return bad


def main(argv):
    failures = []
    i = 0
    checked = 0
    while i < len(argv):
        if argv[i] == '--lib':
            lib, macro = argv[i + 1], argv[i + 2]
            j = i + 3
            headers = []
            while j < len(argv) and not argv[j].startswith('--'):
                headers.append(argv[j])
                j += 1
            i = j
            syms = exported(lib)
            names, marked = declared(headers, macro)
            for s in sorted(syms - names):
                failures.append('%s exports %s, which no installed header '
                                'declares' % (lib, s))
            for s in sorted(marked - syms):
                failures.append('%s does not export %s, which an installed '
                                'header marks %s' % (lib, s, macro))
            for where in undated(headers, macro):
                failures.append('%s: a %s declaration without Since: in the '
                                'comment above it' % (where, macro))
            print('%s: %d exported, %d declared %s' % (lib, len(syms),
                                                     len(marked), macro))
            if not syms:
                failures.append('%s exports nothing (wrong file?)' % lib)
            checked += 1
        elif argv[i] == '--plugin':
            plugin = argv[i + 1]
            i += 2
            syms = exported(plugin)
            desc = [s for s in syms
                    if re.fullmatch(r'gst_plugin_\w+_(get_desc|register)', s)]
            for s in sorted(syms - set(desc)):
                failures.append('plugin %s exports %s (only its descriptor '
                                'may be exported)' % (plugin, s))
            if not desc:
                failures.append('plugin %s exports no descriptor' % plugin)
            print('%s: exports %s' % (plugin, ' '.join(sorted(syms))))
            checked += 1
        elif argv[i] == '--binding':
            binding, lib = argv[i + 1], argv[i + 2]
            i += 3
            text = open(binding, encoding='utf-8').read()
            used = set(re.findall(r'"(pf_\w+)"\s*:\s*\(', text))
            used |= set(re.findall(r'\blib\.(pf_\w+)', text))
            for s in sorted(used - exported(lib)):
                failures.append('%s calls %s, which %s does not export'
                                % (binding, s, lib))
            if not used:
                failures.append('%s: no prototype found (format changed?)'
                                % binding)
            print('%s: %d functions of %s' % (binding, len(used), lib))
            checked += 1
        else:
            failures.append('bad argument %r' % argv[i])
            break
    for f in failures:
        print('FAIL: ' + f)
    if checked == 0:
        print('FAIL: nothing checked')
        return 1
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
