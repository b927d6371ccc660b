// Turns a (bound) tree into the flat Program that evaluation runs. Constant subtrees are folded (12 * 1024
// becomes 12288) in the program only; the tree, and so to_string(), keeps what was written.

#include <algorithm>
#include <string>
#include <vector>

#include "tuner/expr/node.h"

namespace kernlathe::expr {

namespace {

bool has_names(const Node& node) {
  if (node.operation == Operation::name) return true;
  for (const auto& child : node.children) {
    if (has_names(child)) return true;
  }
  return false;
}

class Compiler {
 public:
  explicit Compiler(Program& program) : program_(program) {}

  // False when the program would need more stack than evaluation provides.
  bool compile_root(const Node& root) {
    push_onto_stack(root);
    return maximum_depth_ <= program_stack_capacity;
  }

 private:
  struct Operand {
    OperandKind kind;
    int index;
  };

  // The value of a subtree that reads no names. Strings it yields point into this tree's literals, which live
  // as long as the program. A subtree that fails (1 // 0) is not folded: it fails when, and only if,
  // evaluation reaches it, with the full message.
  static bool fold(const Node& node, Scalar& value) {
    if (node.operation == Operation::list || has_names(node)) return false;
    static const std::string no_text;
    static const SourceLocation nowhere;
    try {
      value = evaluate_tree(node, EvaluationContext{{}, &no_text, &nowhere});
      return true;
    } catch (const EvaluationError&) {
      return false;
    }
  }

  static bool fold_all(const std::vector<Node>& nodes, std::vector<Scalar>& values) {
    for (const auto& node : nodes) {
      Scalar value;
      if (!fold(node, value)) return false;
      values.push_back(value);
    }
    return true;
  }

  int add_constant(const Scalar& value) {
    program_.constants.push_back(value);
    return static_cast<int>(program_.constants.size()) - 1;
  }

  // Changes the tracked stack depth by `change` (pushes minus pops) for the instruction being emitted.
  Instruction& emit(Opcode opcode, const Node& node, int change) {
    depth_ += change;
    maximum_depth_ = std::max(maximum_depth_, depth_);
    Instruction instruction;
    instruction.opcode = opcode;
    instruction.node = &node;
    program_.code.push_back(instruction);
    return program_.code.back();
  }

  static int pops(const Operand& operand) { return operand.kind == OperandKind::stack ? 1 : 0; }

  // A literal, a name or a folded constant is read where it is; anything else is computed onto the stack.
  Operand operand_of(const Node& node) {
    if (node.operation == Operation::literal) {
      return {OperandKind::constant,
              add_constant(node.literal.kind == Scalar::Kind::string ? Scalar::of_string(&node.text) : node.literal)};
    }
    if (node.operation == Operation::name) {
      if (node.slot < 0) program_.unbound = true;
      program_.slot_count = std::max(program_.slot_count, node.slot + 1);
      return {OperandKind::slot, node.slot};
    }
    Scalar folded;
    if (fold(node, folded)) return {OperandKind::constant, add_constant(folded)};
    compile(node);
    return {OperandKind::stack, 0};
  }

  void push_onto_stack(const Node& node) {
    Operand operand = operand_of(node);
    if (operand.kind == OperandKind::stack) return;
    Instruction& instruction = emit(Opcode::push, node, 1);
    instruction.left_kind = operand.kind;
    instruction.left = operand.index;
  }

  void emit_unary(Opcode opcode, const Node& node) {
    Operand operand = operand_of(node.children[0]);
    Instruction& instruction = emit(opcode, node, 1 - pops(operand));
    instruction.left_kind = operand.kind;
    instruction.left = operand.index;
  }

  void emit_binary(Opcode opcode, const Node& node, const Node& left_node, const Node& right_node,
                   Comparison comparison = Comparison::equal) {
    Operand left = operand_of(left_node);
    Operand right = operand_of(right_node);
    Instruction& instruction = emit(opcode, node, 1 - pops(left) - pops(right));
    instruction.comparison = comparison;
    instruction.left_kind = left.kind;
    instruction.left = left.index;
    instruction.right_kind = right.kind;
    instruction.right = right.index;
  }

  void patch_to_here(const std::vector<std::size_t>& jumps) {
    for (auto index : jumps) program_.code[index].target = static_cast<int>(program_.code.size());
  }

  void compile_compare(const Node& node) {
    const auto& comparisons = node.comparisons;
    bool membership = comparisons.back() == Comparison::in || comparisons.back() == Comparison::not_in;
    if (comparisons.size() == 1 && !membership) {
      emit_binary(Opcode::compare, node, node.children[0], node.children[1], comparisons[0]);
      return;
    }
    if (comparisons.size() == 1 && membership) {
      std::vector<Scalar> elements;
      if (fold_all(node.children[1].children, elements)) {
        Operand left = operand_of(node.children[0]);
        auto first = static_cast<int>(program_.constants.size());
        for (const auto& element : elements) add_constant(element);
        Instruction& instruction = emit(Opcode::member_of_constants, node, 1 - pops(left));
        instruction.comparison = comparisons[0];
        instruction.left_kind = left.kind;
        instruction.left = left.index;
        instruction.right = first;
        instruction.target = static_cast<int>(elements.size());
        return;
      }
    }
    if (membership) {
      emit(Opcode::subtree, node, 1);
      return;
    }
    // a < b < c: b is computed once and compared twice, as Python does.
    std::vector<std::size_t> exits;
    push_onto_stack(node.children[0]);
    for (std::size_t i = 0; i < comparisons.size(); ++i) {
      push_onto_stack(node.children[i + 1]);
      bool last = i + 1 == comparisons.size();
      Instruction& instruction = emit(last ? Opcode::compare : Opcode::compare_chain, node, -1);
      instruction.comparison = comparisons[i];
      if (!last) exits.push_back(program_.code.size() - 1);
    }
    patch_to_here(exits);
  }

  void compile(const Node& node) {
    switch (node.operation) {
      case Operation::literal:
      case Operation::name:
        push_onto_stack(node);
        return;
      case Operation::negate: emit_unary(Opcode::negate, node); return;
      case Operation::unary_plus: emit_unary(Opcode::unary_plus, node); return;
      case Operation::logical_not: emit_unary(Opcode::logical_not, node); return;
      case Operation::add:
      case Operation::subtract:
      case Operation::multiply:
      case Operation::divide:
      case Operation::floor_divide:
      case Operation::modulo:
      case Operation::power: {
        auto opcode = static_cast<Opcode>(static_cast<int>(Opcode::add) + static_cast<int>(node.operation) -
                                          static_cast<int>(Operation::add));
        emit_binary(opcode, node, node.children[0], node.children[1]);
        return;
      }
      case Operation::logical_and:
      case Operation::logical_or: {
        Opcode decide = node.operation == Operation::logical_and ? Opcode::jump_if_false_or_pop
                                                                 : Opcode::jump_if_true_or_pop;
        std::vector<std::size_t> exits;
        for (std::size_t i = 0; i + 1 < node.children.size(); ++i) {
          push_onto_stack(node.children[i]);
          emit(decide, node, -1);  // falls through with the operand popped
          exits.push_back(program_.code.size() - 1);
        }
        push_onto_stack(node.children.back());
        emit(Opcode::to_boolean, node, 0);
        patch_to_here(exits);
        return;
      }
      case Operation::compare: compile_compare(node); return;
      case Operation::conditional: {
        push_onto_stack(node.children[1]);
        emit(Opcode::pop_jump_if_false, node, -1);
        std::size_t to_otherwise = program_.code.size() - 1;
        push_onto_stack(node.children[0]);
        emit(Opcode::jump, node, -1);  // the other branch pushes the value at the same depth
        std::size_t to_end = program_.code.size() - 1;
        patch_to_here({to_otherwise});
        push_onto_stack(node.children[2]);
        patch_to_here({to_end});
        return;
      }
      case Operation::call:
      case Operation::list:
        emit(Opcode::subtree, node, 1);
        return;
    }
  }

  Program& program_;
  int depth_ = 0;
  int maximum_depth_ = 0;
};

}  // namespace

void compile(Node& root) {
  root.program = Program{};
  Compiler compiler(root.program);
  if (!compiler.compile_root(root)) {
    bool unbound = root.program.unbound;
    root.program = Program{};  // the tree walker handles it
    root.program.unbound = unbound;
  }
}

}  // namespace kernlathe::expr
