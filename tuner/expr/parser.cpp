// Tokenizer and recursive-descent parser of the expression language. The grammar follows Python's,
// lowest precedence first:
//
//   expression  := disjunction ['if' disjunction 'else' expression]
//   disjunction := conjunction ('or' conjunction)*
//   conjunction := inversion ('and' inversion)*
//   inversion   := 'not' inversion | comparison
//   comparison  := sum ((== != < <= > >=) sum | ('in' | 'not' 'in') list)*
//   sum         := term (('+' | '-') term)*
//   term        := factor (('*' | '/' | '//' | '%') factor)*
//   factor      := ('+' | '-') factor | power
//   power       := primary ['**' factor]
//   primary     := number | string | True | False | name ['[' integer ']'] | function '(' arguments ')'
//                | '(' expression ')'
//
// `name[integer]` (T1 files write ProblemSize[0]) is read as one variable named "name[integer]".

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "tuner/expr/node.h"

namespace kernlathe::expr {

namespace {

constexpr FunctionInfo function_table[] = {
    {"min", Function::min, 2, -1},       {"max", Function::max, 2, -1},
    {"abs", Function::abs, 1, 1},        {"ceil_div", Function::ceil_div, 2, 2},
    {"floor", Function::floor, 1, 1},    {"ceil", Function::ceil, 1, 1},
    {"log2", Function::log2, 1, 1},      {"ilog2", Function::ilog2, 1, 1},
    {"is_pow2", Function::is_pow2, 1, 1}, {"int", Function::to_int, 1, 1},
    {"float", Function::to_float, 1, 1}, {"round", Function::round, 1, 1},
    {"sqrt", Function::sqrt, 1, 1},
};

enum class TokenKind { end, integer, real, string, identifier, keyword, symbol };

struct Token {
  TokenKind kind = TokenKind::end;
  std::string_view spelling;  // as written
  int offset = 0;
  std::int64_t integer = 0;
  double real = 0;
  std::string string;  // contents of a string literal, escapes resolved
};

bool is_identifier_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_identifier_char(char c) { return is_identifier_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_keyword(std::string_view word) {
  return word == "and" || word == "or" || word == "not" || word == "in" || word == "if" || word == "else" ||
         word == "True" || word == "False";
}

// A character as it can be shown in a message, even when it is not printable.
std::string show_character(char c) {
  auto byte = static_cast<unsigned char>(c);
  if (byte < 0x20 || byte >= 0x7f) return fmt::format("\\x{:02x}", byte);
  return std::string(1, c);
}

class Parser {
 public:
  Parser(std::string_view text, const SourceLocation& where) : text_(text), where_(where) {}

  Node parse() {
    tokenize();
    if (tokens_.front().kind == TokenKind::end) fail(0, "empty expression");
    Node root = parse_expression();
    if (current().kind != TokenKind::end) {
      fail(current().offset, fmt::format("expected an operator or the end of the expression, found {}{}",
                                         describe(current()), hint_for(current())));
    }
    return root;
  }

 private:
  // ------------------------------------------------------------------ errors

  SourceLocation location_of(int offset) const {
    SourceLocation location = where_;
    auto before = text_.substr(0, static_cast<std::size_t>(offset));
    auto newlines = std::count(before.begin(), before.end(), '\n');
    if (newlines == 0) {
      location.column = (where_.column > 0 ? where_.column : 1) + offset;
    } else {
      // Only a multi-line expression (a YAML block scalar) gets here; its lines are counted from where.line.
      location.line = where_.line > 0 ? where_.line + static_cast<int>(newlines) : 0;
      location.column = offset - static_cast<int>(before.rfind('\n'));
    }
    return location;
  }

  [[noreturn]] void fail(int offset, const std::string& message) const {
    throw InputError(location_of(offset), fmt::format("in expression '{}': {}", text_, message));
  }

  static std::string describe(const Token& token) {
    if (token.kind == TokenKind::end) return "the end of the expression";
    return fmt::format("'{}'", token.spelling);
  }

  // Habits from C and from other languages that deserve a pointer to the Python spelling.
  static std::string hint_for(const Token& token) {
    if (token.kind != TokenKind::identifier) return "";
    if (token.spelling == "is") return " ('is' is not supported; use '==')";
    if (token.spelling == "true" || token.spelling == "false") return " (booleans are written True and False)";
    return "";
  }

  // ------------------------------------------------------------------ tokens

  void tokenize() {
    // Growing the tokens one reallocation at a time was 7% of parsing a kernel description's expressions (perf over
    // benchmarks/bench_runtime_plan.cpp). A token and the space after it take two characters or more, mostly.
    tokens_.reserve(text_.size() / 2 + 2);
    std::size_t position = 0;
    while (true) {
      while (position < text_.size() &&
             (text_[position] == ' ' || text_[position] == '\t' || text_[position] == '\n' || text_[position] == '\r')) {
        ++position;
      }
      Token token;
      token.offset = static_cast<int>(position);
      if (position == text_.size()) {
        tokens_.push_back(std::move(token));
        return;
      }
      char c = text_[position];
      if (is_digit(c) || (c == '.' && position + 1 < text_.size() && is_digit(text_[position + 1]))) {
        position = lex_number(position, token);
      } else if (is_identifier_start(c)) {
        std::size_t end = position;
        while (end < text_.size() && is_identifier_char(text_[end])) ++end;
        token.spelling = text_.substr(position, end - position);
        token.kind = is_keyword(token.spelling) ? TokenKind::keyword : TokenKind::identifier;
        position = end;
      } else if (c == '\'' || c == '"') {
        position = lex_string(position, token);
      } else {
        position = lex_symbol(position, token);
      }
      tokens_.push_back(std::move(token));
    }
  }

  std::size_t lex_number(std::size_t start, Token& token) {
    std::size_t end = start;
    int base = 10;
    bool real = false;
    if (text_[start] == '0' && start + 1 < text_.size() &&
        std::string_view("xXoObB").find(text_[start + 1]) != std::string_view::npos) {
      char prefix = static_cast<char>(text_[start + 1] | 0x20);
      base = prefix == 'x' ? 16 : prefix == 'o' ? 8 : 2;
      end = start + 2;
      while (end < text_.size() && std::isxdigit(static_cast<unsigned char>(text_[end]))) ++end;
    } else {
      while (end < text_.size() && is_digit(text_[end])) ++end;
      if (end < text_.size() && text_[end] == '.') {
        real = true;
        ++end;
        while (end < text_.size() && is_digit(text_[end])) ++end;
      }
      // An exponent only when digits follow, so that `1else` still reads as 1 followed by else.
      if (end < text_.size() && (text_[end] == 'e' || text_[end] == 'E')) {
        std::size_t exponent = end + 1;
        if (exponent < text_.size() && (text_[exponent] == '+' || text_[exponent] == '-')) ++exponent;
        if (exponent < text_.size() && is_digit(text_[exponent])) {
          real = true;
          end = exponent;
          while (end < text_.size() && is_digit(text_[end])) ++end;
        }
      }
    }
    token.spelling = text_.substr(start, end - start);
    int offset = static_cast<int>(start);
    if (real) {
      token.kind = TokenKind::real;
      // from_chars does not take a leading '.' or a trailing one before an exponent; Python does.
      std::string normalized = token.spelling.front() == '.' ? "0" : "";
      normalized += token.spelling;
      auto result = std::from_chars(normalized.data(), normalized.data() + normalized.size(), token.real);
      if (result.ec == std::errc::result_out_of_range) {
        // Python rounds 1e999 to inf and 1e-999 to 0.
        token.real = normalized.find("e-") != std::string::npos || normalized.find("E-") != std::string::npos
                         ? 0.0
                         : std::numeric_limits<double>::infinity();
      } else if (result.ec != std::errc() || result.ptr != normalized.data() + normalized.size()) {
        fail(offset, fmt::format("invalid number '{}'", token.spelling));
      }
      return end;
    }
    token.kind = TokenKind::integer;
    std::string_view digits = base == 10 ? token.spelling : token.spelling.substr(2);
    if (digits.empty()) fail(offset, fmt::format("invalid number '{}': digits must follow the prefix", token.spelling));
    if (base == 10 && digits.size() > 1 && digits.front() == '0' &&
        digits.find_first_not_of('0') != std::string_view::npos) {
      fail(offset, fmt::format("leading zeros are not allowed in '{}' (as in Python; write 0o{} for octal)",
                               token.spelling, digits.substr(digits.find_first_not_of('0'))));
    }
    auto result = std::from_chars(digits.data(), digits.data() + digits.size(), token.integer, base);
    if (result.ec == std::errc::result_out_of_range) {
      fail(offset, fmt::format("integer '{}' does not fit in 64 bits", token.spelling));
    }
    if (result.ec != std::errc() || result.ptr != digits.data() + digits.size()) {
      fail(offset, fmt::format("invalid number '{}'", token.spelling));
    }
    return end;
  }

  std::size_t lex_string(std::size_t start, Token& token) {
    char quote = text_[start];
    std::size_t position = start + 1;
    token.kind = TokenKind::string;
    while (true) {
      if (position >= text_.size() || text_[position] == '\n') {
        fail(static_cast<int>(start), fmt::format("unterminated string: no closing {} found", quote));
      }
      char c = text_[position];
      if (c == quote) break;
      if (c == '\\' && position + 1 < text_.size()) {
        char escaped = text_[position + 1];
        switch (escaped) {
          case '\\': token.string += '\\'; break;
          case '\'': token.string += '\''; break;
          case '"': token.string += '"'; break;
          case 'n': token.string += '\n'; break;
          case 't': token.string += '\t'; break;
          case 'r': token.string += '\r'; break;
          default:  // Python keeps an unknown escape as written
            token.string += '\\';
            token.string += escaped;
        }
        position += 2;
        continue;
      }
      token.string += c;
      ++position;
    }
    token.spelling = text_.substr(start, position + 1 - start);
    return position + 1;
  }

  std::size_t lex_symbol(std::size_t start, Token& token) {
    token.kind = TokenKind::symbol;
    static constexpr std::string_view two_character[] = {"**", "//", "==", "!=", "<=", ">="};
    std::string_view rest = text_.substr(start);
    for (auto symbol : two_character) {
      if (rest.starts_with(symbol)) {
        token.spelling = rest.substr(0, 2);
        return start + 2;
      }
    }
    char c = text_[start];
    if (std::string_view("+-*/%<>()[],").find(c) != std::string_view::npos) {
      token.spelling = rest.substr(0, 1);
      return start + 1;
    }
    int offset = static_cast<int>(start);
    if (c == '=') fail(offset, "'=' is not an operator here; compare with '=='");
    if (c == '&') fail(offset, fmt::format("'{}' is not an operator here; use 'and'", rest.starts_with("&&") ? "&&" : "&"));
    if (c == '|') fail(offset, fmt::format("'{}' is not an operator here; use 'or'", rest.starts_with("||") ? "||" : "|"));
    if (c == '!') fail(offset, "'!' is not an operator here; use 'not'");
    if (c == '?' || c == ':') fail(offset, fmt::format("'{}' is not an operator here; write 'a if condition else b'", c));
    fail(offset, fmt::format("unexpected character '{}'", show_character(c)));
  }

  // ------------------------------------------------------------------ grammar

  const Token& current() const { return tokens_[index_]; }
  const Token& peek(std::size_t ahead) const { return tokens_[std::min(index_ + ahead, tokens_.size() - 1)]; }
  void advance() {
    if (index_ + 1 < tokens_.size()) ++index_;
  }

  bool at(TokenKind kind, std::string_view spelling) const {
    return current().kind == kind && current().spelling == spelling;
  }
  bool at_symbol(std::string_view spelling) const { return at(TokenKind::symbol, spelling); }
  bool at_keyword(std::string_view spelling) const { return at(TokenKind::keyword, spelling); }

  void expect_symbol(std::string_view spelling, std::string_view context) {
    if (!at_symbol(spelling)) {
      fail(current().offset, fmt::format("expected '{}'{}, found {}", spelling, context, describe(current())));
    }
    advance();
  }

  // Guards recursion that creates no node (parentheses), so that "((((...))))" cannot exhaust the stack.
  struct NestingGuard {
    explicit NestingGuard(Parser& parser) : parser_(parser) {
      if (++parser_.nesting_ > maximum_depth) {
        parser_.fail(parser_.current().offset, fmt::format("expression nested more than {} levels deep", maximum_depth));
      }
    }
    ~NestingGuard() { --parser_.nesting_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;
    Parser& parser_;
  };

  Node make(Operation operation, int offset, std::vector<Node> children) {
    Node node;
    node.operation = operation;
    node.offset = offset;
    int depth = 0;
    for (const auto& child : children) depth = std::max<int>(depth, child.depth);
    if (depth + 1 > maximum_depth) {
      fail(offset, fmt::format("expression nested more than {} levels deep", maximum_depth));
    }
    node.depth = static_cast<std::uint16_t>(depth + 1);
    node.children = std::move(children);
    return node;
  }

  Node parse_expression() {
    NestingGuard guard(*this);
    Node value = parse_disjunction();
    if (!at_keyword("if")) return value;
    advance();
    Node condition = parse_disjunction();
    if (!at_keyword("else")) {
      fail(current().offset, fmt::format("expected 'else' of the conditional 'a if condition else b', found {}",
                                         describe(current())));
    }
    advance();
    Node otherwise = parse_expression();
    int offset = value.offset;
    std::vector<Node> children;
    children.reserve(3);
    children.push_back(std::move(value));
    children.push_back(std::move(condition));
    children.push_back(std::move(otherwise));
    return make(Operation::conditional, offset, std::move(children));
  }

  Node parse_logical(Operation operation, std::string_view keyword) {
    auto operand = [&] { return operation == Operation::logical_or ? parse_logical(Operation::logical_and, "and")
                                                                   : parse_inversion(); };
    Node first = operand();
    if (!at_keyword(keyword)) return first;
    int offset = first.offset;
    std::vector<Node> operands;
    operands.push_back(std::move(first));
    while (at_keyword(keyword)) {
      advance();
      operands.push_back(operand());
    }
    return make(operation, offset, std::move(operands));
  }

  Node parse_disjunction() { return parse_logical(Operation::logical_or, "or"); }

  Node parse_inversion() {
    if (!at_keyword("not")) return parse_comparison();
    NestingGuard guard(*this);
    int offset = current().offset;
    advance();
    std::vector<Node> operand;
    operand.push_back(parse_inversion());
    return make(Operation::logical_not, offset, std::move(operand));
  }

  bool at_comparison(Comparison& comparison) const {
    const Token& token = current();
    if (token.kind == TokenKind::keyword) {
      if (token.spelling == "in") {
        comparison = Comparison::in;
        return true;
      }
      if (token.spelling == "not" && peek(1).kind == TokenKind::keyword && peek(1).spelling == "in") {
        comparison = Comparison::not_in;
        return true;
      }
      return false;
    }
    if (token.kind != TokenKind::symbol) return false;
    static constexpr std::pair<std::string_view, Comparison> symbols[] = {
        {"==", Comparison::equal}, {"!=", Comparison::not_equal},    {"<", Comparison::less},
        {"<=", Comparison::less_equal}, {">", Comparison::greater}, {">=", Comparison::greater_equal}};
    for (auto [symbol, meaning] : symbols) {
      if (token.spelling == symbol) {
        comparison = meaning;
        return true;
      }
    }
    return false;
  }

  Node parse_comparison() {
    Node first = parse_sum();
    Comparison comparison{};
    if (!at_comparison(comparison)) return first;
    int offset = first.offset;
    std::vector<Node> operands;
    std::vector<Comparison> comparisons;
    operands.push_back(std::move(first));
    while (at_comparison(comparison)) {
      if (!comparisons.empty() && (comparisons.back() == Comparison::in || comparisons.back() == Comparison::not_in)) {
        fail(current().offset, fmt::format("a comparison cannot follow '{} [...]'; add parentheses",
                                           comparison_symbol(comparisons.back())));
      }
      advance();
      if (comparison == Comparison::not_in) advance();
      comparisons.push_back(comparison);
      if (comparison == Comparison::in || comparison == Comparison::not_in) {
        operands.push_back(parse_list(comparison));
      } else {
        operands.push_back(parse_sum());
      }
    }
    Node node = make(Operation::compare, offset, std::move(operands));
    node.comparisons = std::move(comparisons);
    return node;
  }

  Node parse_list(Comparison comparison) {
    NestingGuard guard(*this);
    int offset = current().offset;
    std::string_view closing;
    if (at_symbol("[")) {
      closing = "]";
    } else if (at_symbol("(")) {
      closing = ")";
    } else {
      fail(offset, fmt::format("expected a list such as [1, 2, 4] after '{}', found {}", comparison_symbol(comparison),
                               describe(current())));
    }
    advance();
    std::vector<Node> elements;
    while (!at_symbol(closing)) {
      elements.push_back(parse_expression());
      if (at_symbol(",")) {
        advance();
      } else if (!at_symbol(closing)) {
        fail(current().offset, fmt::format("expected ',' or '{}' in the list, found {}", closing, describe(current())));
      }
    }
    advance();
    return make(Operation::list, offset, std::move(elements));
  }

  Node parse_binary_chain(Node (Parser::*parse_operand)(),
                          std::initializer_list<std::pair<std::string_view, Operation>> operators) {
    Node left = (this->*parse_operand)();
    while (true) {
      const Operation* matched = nullptr;
      for (const auto& [symbol, operation] : operators) {
        if (at_symbol(symbol)) matched = &operation;
      }
      if (matched == nullptr) return left;
      Operation operation = *matched;
      advance();
      int offset = left.offset;
      std::vector<Node> operands;
      operands.reserve(2);
      operands.push_back(std::move(left));
      operands.push_back((this->*parse_operand)());
      left = make(operation, offset, std::move(operands));
    }
  }

  Node parse_sum() {
    return parse_binary_chain(&Parser::parse_term,
                              {{"+", Operation::add}, {"-", Operation::subtract}});
  }

  Node parse_term() {
    return parse_binary_chain(&Parser::parse_factor,
                              {{"*", Operation::multiply},
                               {"/", Operation::divide},
                               {"//", Operation::floor_divide},
                               {"%", Operation::modulo}});
  }

  Node parse_factor() {
    if (!at_symbol("-") && !at_symbol("+")) return parse_power();
    NestingGuard guard(*this);
    int offset = current().offset;
    Operation operation = at_symbol("-") ? Operation::negate : Operation::unary_plus;
    advance();
    std::vector<Node> operand;
    operand.push_back(parse_factor());
    return make(operation, offset, std::move(operand));
  }

  Node parse_power() {
    Node base = parse_primary();
    if (!at_symbol("**")) return base;
    NestingGuard guard(*this);
    advance();
    int offset = base.offset;
    std::vector<Node> operands;
    operands.reserve(2);
    operands.push_back(std::move(base));
    operands.push_back(parse_factor());  // right-associative, and 2 ** -1 is allowed
    return make(Operation::power, offset, std::move(operands));
  }

  Node parse_primary() {
    const Token& token = current();
    Node node;
    node.offset = token.offset;
    switch (token.kind) {
      case TokenKind::integer:
        node.literal = Scalar::of_integer(token.integer);
        advance();
        return node;
      case TokenKind::real:
        node.literal = Scalar::of_real(token.real);
        advance();
        return node;
      case TokenKind::string:
        node.literal = Scalar::of_string(nullptr);
        node.text = token.string;
        advance();
        return node;
      case TokenKind::keyword:
        if (token.spelling == "True" || token.spelling == "False") {
          node.literal = Scalar::of_boolean(token.spelling == "True");
          advance();
          return node;
        }
        break;
      case TokenKind::identifier:
        return parse_name_or_call();
      case TokenKind::symbol:
        if (token.spelling == "(") {
          NestingGuard guard(*this);
          int open = token.offset;
          advance();
          if (at_symbol(")")) fail(current().offset, "expected an expression inside '()', found ')'");
          Node inner = parse_expression();
          if (at_symbol(",")) fail(current().offset, "a tuple is only allowed after 'in' or 'not in'");
          expect_symbol(")", fmt::format(" to close the '(' at column {}", location_of(open).column));
          return inner;
        }
        break;
      case TokenKind::end:
        break;
    }
    fail(token.offset, fmt::format("expected an operand (a number, a name, a call or '('), found {}{}",
                                   describe(token), hint_for(token)));
  }

  Node parse_name_or_call() {
    const Token& token = current();
    int offset = token.offset;
    std::string name(token.spelling);
    advance();
    if (at_symbol("(")) return parse_call(name, offset);
    Node node;
    node.operation = Operation::name;
    node.offset = offset;
    node.text = name;
    if (at_symbol("[")) {
      advance();
      if (current().kind != TokenKind::integer) {
        fail(current().offset, fmt::format("expected an integer index after '{}[', found {}", name, describe(current())));
      }
      node.text += fmt::format("[{}]", current().integer);
      advance();
      expect_symbol("]", " to close the index");
    }
    return node;
  }

  Node parse_call(const std::string& name, int offset) {
    const FunctionInfo* info = nullptr;
    for (const auto& candidate : function_table) {
      if (candidate.name == name) info = &candidate;
    }
    if (info == nullptr) {
      std::vector<std::string> names;
      for (const auto& candidate : function_table) names.emplace_back(candidate.name);
      std::string suggestion = closest_match(name, names);
      fail(offset, suggestion.empty()
                       ? fmt::format("unknown function '{}'; the functions are {}", name, fmt::join(names, ", "))
                       : fmt::format("unknown function '{}'; did you mean '{}'?", name, suggestion));
    }
    NestingGuard guard(*this);
    advance();  // (
    std::vector<Node> arguments;
    while (!at_symbol(")")) {
      arguments.push_back(parse_expression());
      if (at_symbol(",")) {
        advance();
      } else if (!at_symbol(")")) {
        fail(current().offset,
             fmt::format("expected ',' or ')' in the arguments of {}(), found {}", name, describe(current())));
      }
    }
    advance();
    int count = static_cast<int>(arguments.size());
    if (count < info->minimum_arguments || (info->maximum_arguments >= 0 && count > info->maximum_arguments)) {
      std::string expected = info->maximum_arguments < 0 ? fmt::format("at least {}", info->minimum_arguments)
                                                         : fmt::format("{}", info->minimum_arguments);
      fail(offset, fmt::format("{}() takes {} argument{}, got {}", name, expected,
                               info->minimum_arguments == 1 && info->maximum_arguments == 1 ? "" : "s", count));
    }
    Node node = make(Operation::call, offset, std::move(arguments));
    node.function = info->function;
    return node;
  }

  std::string_view text_;
  SourceLocation where_;
  std::vector<Token> tokens_;
  std::size_t index_ = 0;
  int nesting_ = 0;
};

}  // namespace

std::span<const FunctionInfo> functions() { return function_table; }

const FunctionInfo& function_info(Function function) {
  for (const auto& info : function_table) {
    if (info.function == function) return info;
  }
  return function_table[0];
}

const char* comparison_symbol(Comparison comparison) {
  switch (comparison) {
    case Comparison::equal: return "==";
    case Comparison::not_equal: return "!=";
    case Comparison::less: return "<";
    case Comparison::less_equal: return "<=";
    case Comparison::greater: return ">";
    case Comparison::greater_equal: return ">=";
    case Comparison::in: return "in";
    case Comparison::not_in: return "not in";
  }
  return "?";
}

Node parse_tree(std::string_view text, const SourceLocation& where) { return Parser(text, where).parse(); }

}  // namespace kernlathe::expr
