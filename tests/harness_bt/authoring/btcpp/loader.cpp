// A BehaviorTree.CPP 4 loader for the conformance tests: it registers every node model that
// the given files declare in their <TreeNodesModel> (with its kind and its typed ports),
// loads the trees, creates the main tree and ticks it until it ends.
//
//   btcpp_loader TREE.xml [--models MODELS.xml]... [--tree ID] [--write OUT.xml]
//
// A registered node reads every input port the element sets (or whose model gives a
// default) as the declared type and writes every output port it sets, so a value BT.CPP cannot
// convert, a blackboard key of two types or a key nobody wrote ends the run with BT.CPP's own
// message. Actions and conditions then succeed; controls tick their children in order until
// one does not succeed (then reads its ports: its first child may set them); decorators
// return their child's status.
//
// Output: "created N nodes", "status SUCCESS|FAILURE|...", and on error "error: ..." with
// exit status 1. --write saves the created tree as BT.CPP writes it (WriteTreeToXML).

#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "behaviortree_cpp/bt_factory.h"
#include "behaviortree_cpp/xml_parsing.h"
#include "tinyxml2.h"

namespace
{

using Reader = std::function<BT::Expected<std::string>(BT::TreeNode&, const std::string&)>;
using Writer = std::function<BT::Result(BT::TreeNode&, const std::string&)>;

struct PortType
{
  std::function<std::pair<std::string, BT::PortInfo>(BT::PortDirection, const std::string&)> make;
  Reader read;
  Writer write;
};

template <typename T>
PortType typed()
{
  PortType out;
  out.make = [](BT::PortDirection dir, const std::string& name) {
    return BT::CreatePort<T>(dir, name);
  };
  out.read = [](BT::TreeNode& node, const std::string& name) -> BT::Expected<std::string> {
    auto value = node.getInput<T>(name);
    if(!value)
    {
      return nonstd::make_unexpected(value.error());
    }
    return std::string("ok");
  };
  out.write = [](BT::TreeNode& node, const std::string& name) {
    return node.setOutput<T>(name, T{});
  };
  return out;
}

const std::map<std::string, PortType>& portTypes()
{
  static const std::map<std::string, PortType> types = {
    { "std::string", typed<std::string>() },
    { "int", typed<int>() },
    { "unsigned", typed<unsigned>() },
    { "double", typed<double>() },
    { "bool", typed<bool>() },
    { "std::vector<std::string>", typed<std::vector<std::string>>() },
    { "std::vector<double>", typed<std::vector<double>>() },
    { "std::vector<int>", typed<std::vector<int>>() },
    { "std::vector<bool>", typed<std::vector<bool>>() },
  };
  return types;
}

struct PortDecl
{
  std::string name;
  std::string type;
  BT::PortDirection direction;
};

struct Model
{
  BT::NodeType kind;
  std::vector<PortDecl> ports;
};

// What every registered node does with its ports.
void usePorts(BT::TreeNode& node, const BT::NodeConfig& config,
              const std::vector<PortDecl>& ports)
{
  const auto& types = portTypes();
  for(const auto& port : ports)
  {
    const auto& type = types.at(port.type);
    if(port.direction != BT::PortDirection::OUTPUT &&
       config.input_ports.count(port.name) != 0)
    {
      auto got = type.read(node, port.name);
      if(!got)
      {
        throw BT::RuntimeError("node [", node.fullPath(), "] input port [", port.name,
                               "] (", port.type, "): ", got.error());
      }
    }
    if(port.direction != BT::PortDirection::INPUT &&
       config.output_ports.count(port.name) != 0)
    {
      auto done = type.write(node, port.name);
      if(!done)
      {
        throw BT::RuntimeError("node [", node.fullPath(), "] output port [", port.name,
                               "] (", port.type, "): ", done.error());
      }
    }
  }
}

class ModelAction : public BT::SyncActionNode
{
public:
  ModelAction(const std::string& name, const BT::NodeConfig& config,
              const std::vector<PortDecl>* ports)
    : BT::SyncActionNode(name, config), ports_(ports)
  {}
  BT::NodeStatus tick() override
  {
    usePorts(*this, config(), *ports_);
    return BT::NodeStatus::SUCCESS;
  }

private:
  const std::vector<PortDecl>* ports_;
};

class ModelCondition : public BT::ConditionNode
{
public:
  ModelCondition(const std::string& name, const BT::NodeConfig& config,
                 const std::vector<PortDecl>* ports)
    : BT::ConditionNode(name, config), ports_(ports)
  {}
  BT::NodeStatus tick() override
  {
    usePorts(*this, config(), *ports_);
    return BT::NodeStatus::SUCCESS;
  }

private:
  const std::vector<PortDecl>* ports_;
};

class ModelControl : public BT::ControlNode
{
public:
  ModelControl(const std::string& name, const BT::NodeConfig& config,
               const std::vector<PortDecl>* ports)
    : BT::ControlNode(name, config), ports_(ports)
  {}
  BT::NodeStatus tick() override
  {
    setStatus(BT::NodeStatus::RUNNING);
    while(current_ < children_nodes_.size())
    {
      auto status = children_nodes_[current_]->executeTick();
      if(status == BT::NodeStatus::RUNNING)
      {
        return status;  // ticked again from this child
      }
      if(status != BT::NodeStatus::SUCCESS && status != BT::NodeStatus::SKIPPED)
      {
        resetChildren();
        current_ = 0;
        return status;
      }
      ++current_;
    }
    resetChildren();
    current_ = 0;
    usePorts(*this, config(), *ports_);  // (after its children: the first may set them)
    return BT::NodeStatus::SUCCESS;
  }

  void halt() override
  {
    current_ = 0;
    BT::ControlNode::halt();
  }

private:
  const std::vector<PortDecl>* ports_;
  size_t current_ = 0;
};

class ModelDecorator : public BT::DecoratorNode
{
public:
  ModelDecorator(const std::string& name, const BT::NodeConfig& config,
                 const std::vector<PortDecl>* ports)
    : BT::DecoratorNode(name, config), ports_(ports)
  {}
  BT::NodeStatus tick() override
  {
    usePorts(*this, config(), *ports_);
    setStatus(BT::NodeStatus::RUNNING);
    auto status = child_node_->executeTick();
    if(status != BT::NodeStatus::RUNNING)
    {
      resetChild();
    }
    return status;
  }

private:
  const std::vector<PortDecl>* ports_;
};

std::string readFile(const std::string& path)
{
  std::ifstream in(path);
  if(!in)
  {
    throw BT::RuntimeError("cannot read ", path);
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The node models a file declares (SubTree models are BT.CPP's own business).
void readModels(const std::string& path, std::map<std::string, Model>& models)
{
  tinyxml2::XMLDocument doc;
  const auto text = readFile(path);
  if(doc.Parse(text.c_str(), text.size()) != tinyxml2::XML_SUCCESS)
  {
    throw BT::RuntimeError(path, ": ", doc.ErrorStr());
  }
  const std::map<std::string, BT::NodeType> kinds = {
    { "Action", BT::NodeType::ACTION },
    { "Condition", BT::NodeType::CONDITION },
    { "Control", BT::NodeType::CONTROL },
    { "Decorator", BT::NodeType::DECORATOR },
  };
  const std::map<std::string, BT::PortDirection> directions = {
    { "input_port", BT::PortDirection::INPUT },
    { "output_port", BT::PortDirection::OUTPUT },
    { "inout_port", BT::PortDirection::INOUT },
  };
  auto* root = doc.RootElement();
  for(auto* model = root ? root->FirstChildElement("TreeNodesModel") : nullptr;
      model != nullptr; model = model->NextSiblingElement("TreeNodesModel"))
  {
    for(auto* el = model->FirstChildElement(); el != nullptr; el = el->NextSiblingElement())
    {
      auto kind = kinds.find(el->Name());
      if(kind == kinds.end())
      {
        continue;
      }
      const char* id = el->Attribute("ID");
      if(id == nullptr)
      {
        throw BT::RuntimeError(path, ": a <", el->Name(), "> model has no ID");
      }
      Model out{ kind->second, {} };
      for(auto* port = el->FirstChildElement(); port != nullptr;
          port = port->NextSiblingElement())
      {
        auto dir = directions.find(port->Name());
        if(dir == directions.end())
        {
          continue;
        }
        const char* name = port->Attribute("name");
        const char* type = port->Attribute("type");
        std::string type_str = type ? type : "std::string";
        if(portTypes().count(type_str) == 0)
        {
          throw BT::RuntimeError(path, ": model [", id, "] port [", name ? name : "?",
                                 "] has type [", type_str,
                                 "], which has no string converter in BehaviorTree.CPP");
        }
        out.ports.push_back({ name ? name : "", type_str, dir->second });
      }
      if(models.count(id) != 0)
      {
        throw BT::RuntimeError(path, ": the node model [", id, "] is declared twice");
      }
      models[id] = out;
    }
  }
}

void registerModels(BT::BehaviorTreeFactory& factory, const std::map<std::string, Model>& models)
{
  for(const auto& [id, model] : models)
  {
    BT::TreeNodeManifest manifest;
    manifest.type = model.kind;
    manifest.registration_ID = id;
    for(const auto& port : model.ports)
    {
      // CreatePort refuses reserved names (`name`, `ID`, a leading `_`) with BT.CPP's text
      auto made = portTypes().at(port.type).make(port.direction, port.name);
      manifest.ports.insert(made);
    }
    const auto* ports = &model.ports;
    BT::NodeBuilder builder;
    switch(model.kind)
    {
      case BT::NodeType::ACTION:
        builder = [ports](const std::string& name, const BT::NodeConfig& config) {
          return std::make_unique<ModelAction>(name, config, ports);
        };
        break;
      case BT::NodeType::CONDITION:
        builder = [ports](const std::string& name, const BT::NodeConfig& config) {
          return std::make_unique<ModelCondition>(name, config, ports);
        };
        break;
      case BT::NodeType::CONTROL:
        builder = [ports](const std::string& name, const BT::NodeConfig& config) {
          return std::make_unique<ModelControl>(name, config, ports);
        };
        break;
      default:
        builder = [ports](const std::string& name, const BT::NodeConfig& config) {
          return std::make_unique<ModelDecorator>(name, config, ports);
        };
    }
    factory.registerBuilder(manifest, builder);
  }
}

}  // namespace

int main(int argc, char** argv)
{
  std::string tree_file, tree_id, write_to;
  std::vector<std::string> model_files;
  for(int i = 1; i < argc; ++i)
  {
    std::string arg = argv[i];
    if((arg == "--models" || arg == "--tree" || arg == "--write") && i + 1 < argc)
    {
      std::string value = argv[++i];
      if(arg == "--models")
        model_files.push_back(value);
      else if(arg == "--tree")
        tree_id = value;
      else
        write_to = value;
    }
    else if(tree_file.empty())
    {
      tree_file = arg;
    }
    else
    {
      std::cerr << "usage: btcpp_loader TREE.xml [--models M.xml]... [--tree ID] "
                   "[--write OUT.xml]\n";
      return 2;
    }
  }
  if(tree_file.empty())
  {
    std::cerr << "usage: btcpp_loader TREE.xml [--models M.xml]... [--tree ID] "
                 "[--write OUT.xml]\n";
    return 2;
  }
  try
  {
    std::map<std::string, Model> models;
    readModels(tree_file, models);
    for(const auto& file : model_files)
    {
      readModels(file, models);
    }
    BT::BehaviorTreeFactory factory;
    std::set<std::string> builtin;
    for(const auto& [id, _] : factory.manifests())
    {
      builtin.insert(id);
    }
    for(auto it = models.begin(); it != models.end();)
    {
      // a file may model BT.CPP's own nodes (Groot2 writes them): those stay BT.CPP's
      it = builtin.count(it->first) != 0 ? models.erase(it) : std::next(it);
    }
    registerModels(factory, models);
    factory.registerBehaviorTreeFromText(readFile(tree_file));
    if(tree_id.empty())
    {
      // the main tree: main_tree_to_execute, else the only tree
      tinyxml2::XMLDocument doc;
      const auto text = readFile(tree_file);
      doc.Parse(text.c_str(), text.size());
      const char* main = doc.RootElement()->Attribute("main_tree_to_execute");
      const auto trees = factory.registeredBehaviorTrees();
      if(main != nullptr)
      {
        tree_id = main;
      }
      else if(trees.size() == 1)
      {
        tree_id = trees.front();
      }
      else
      {
        throw BT::RuntimeError("the file names no main_tree_to_execute and holds ",
                               std::to_string(trees.size()), " trees");
      }
    }
    auto tree = factory.createTree(tree_id);
    int count = 0;
    tree.applyVisitor([&count](const BT::TreeNode*) { ++count; });
    std::cout << "created " << count << " nodes" << std::endl;
    if(!write_to.empty())
    {
      std::ofstream out(write_to);
      out << BT::WriteTreeToXML(tree, false, false);
    }
    BT::NodeStatus status = BT::NodeStatus::IDLE;
    for(int ticks = 0; ticks < 10000; ++ticks)
    {
      status = tree.tickOnce();
      if(status != BT::NodeStatus::RUNNING)
      {
        break;
      }
      tree.sleep(std::chrono::milliseconds(1));
    }
    std::cout << "status " << BT::toStr(status) << std::endl;
    return 0;
  }
  catch(const std::exception& exc)
  {
    std::cout << "error: " << exc.what() << std::endl;
    return 1;
  }
}
