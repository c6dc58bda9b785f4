import Control

/// The fields status's container rows share (ContainerStatus fills them alike).
protocol NamespaceDescription {
    var namespaceID: Int32? { get set }
    var cgroup: String? { get set }
    var runtime: String? { get set }
    var name: String? { get set }
    var addresses: [String]? { get set }
}

extension HeldNamespaceReport: NamespaceDescription {}
extension RoutedNamespaceReport: NamespaceDescription {}
extension RelayedNamespaceReport: NamespaceDescription {}
