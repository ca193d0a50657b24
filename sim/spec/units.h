#pragma once
// Quantities in YAML are SI with explicit suffixes ("80GiB", "2039GB/s", "312TFLOPS", "5us").
// Parsers take the text of one scalar and return the value in base units (bytes, bytes/s, FLOP/s,
// seconds, elements); they throw std::invalid_argument with a short reason on bad text, which the
// YAML layer turns into a file:line:field error. Formatters produce the shortest text that parses
// back to exactly the same value, so saving and loading a spec round-trips.
#include <cstdint>
#include <string>
#include <string_view>

namespace starfish::units {

int64_t parse_bytes(std::string_view text);     // B, KB..PB (1000^n), KiB..PiB (1024^n)
double parse_rate(std::string_view text);       // bytes/s: GB/s, GiB/s, or bits: Gb/s, Gbps
double parse_flops(std::string_view text);      // FLOP/s: TFLOPS, TFLOP/s, PFLOPS, ...
double parse_flop_count(std::string_view text); // FLOP: GFLOP, TFLOP, ...
double parse_seconds(std::string_view text);    // s, ms, us, ns, min, h
int64_t parse_count(std::string_view text);     // plain count: K/M/G/T (1000^n), Ki/Mi/Gi (1024^n)
double parse_number(std::string_view text);     // a plain real number, no suffix

std::string format_bytes(int64_t bytes);
std::string format_rate(double bytes_per_s);
std::string format_flops(double flop_per_s);
std::string format_flop_count(double flop);
std::string format_seconds(double seconds);
std::string format_count(int64_t count);
// A plain number (no suffix) in the shortest text that parses back to exactly `value`: 3e-07,
// 0.1, and whole numbers as integers (500000). For what other programs read (JSON, YAML,
// command lines).
std::string format_number(double value);

// Human-friendly, rounded renderings for tables (not for files): "74.5 GiB", "1.23 ms".
std::string human_bytes(double bytes);
std::string human_seconds(double seconds);
std::string human_count(double count);  // 175.0 B, 6.74 B, 124 M

}  // namespace starfish::units
