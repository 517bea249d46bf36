import {
  create,
  type DescEnum,
  type DescExtension,
  type DescFile,
  type DescMessage,
  type DescService,
  fromBinary,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectRouter } from "@connectrpc/connect";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.ts";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.ts";

// gRPC server reflection (grpc.reflection.v1, and v1alpha for older clients), so that buf curl, grpcurl and gRPC
// GUIs can list and call the service with no local copy of proto/. connect-es has no reflection service of its own
// (connectrpc/connect-es#507 is open) and the npm packages that serve it (@grpc/reflection and others) sit on
// @grpc/grpc-js's server and protobufjs's descriptors, so it is written here, over the protocol's own definitions as
// @grpc/reflection ships them (generated into gen/grpc/reflection/, see buf.gen.yaml), answering from the
// descriptors protobuf-es embeds in the generated code.

/**
 * Registers both reflection services on `router`. What they describe is read from the router when the first
 * reflection request comes, by then complete: every service it serves (reflection included), their files and the
 * files those import.
 */
export function reflectionRoutes(router: ConnectRouter): void {
  let index: DescriptorIndex | undefined;
  const described = () => (index ??= new DescriptorIndex(router.handlers.map((handler) => handler.service)));

  router.service(v1.ServerReflection, {
    serverReflectionInfo: (requests) => answer(described(), requests),
  });
  // v1alpha is the same protocol under its former package name, message for message and field for field: its
  // requests and answers cross over as bytes.
  router.service(v1alpha.ServerReflection, {
    serverReflectionInfo: (requests) => {
      const asV1 = convert(requests, v1alpha.ServerReflectionRequestSchema, v1.ServerReflectionRequestSchema);
      return convert(answer(described(), asV1), v1.ServerReflectionResponseSchema, v1alpha.ServerReflectionResponseSchema);
    },
  });
}

async function* convert<From extends DescMessage, To extends DescMessage>(
  messages: AsyncIterable<MessageShape<From>>,
  from: From,
  to: To,
): AsyncGenerator<MessageShape<To>> {
  for await (const message of messages) yield fromBinary(to, toBinary(from, message));
}

/** One stream: each request answered in turn; a file already sent on it is not sent again as a dependency. */
async function* answer(index: DescriptorIndex, requests: AsyncIterable<v1.ServerReflectionRequest>): AsyncGenerator<v1.ServerReflectionResponse> {
  const sent = new Set<string>();
  for await (const request of requests) {
    yield create(v1.ServerReflectionResponseSchema, {
      validHost: request.host,
      originalRequest: request,
      messageResponse: respond(index, request.messageRequest, sent),
    });
  }
}

function respond(index: DescriptorIndex, request: v1.ServerReflectionRequest["messageRequest"], sent: Set<string>): v1.ServerReflectionResponse["messageResponse"] {
  const files = (file: DescFile | undefined, missing: string): v1.ServerReflectionResponse["messageResponse"] =>
    file === undefined
      ? error(Code.NotFound, missing)
      : { case: "fileDescriptorResponse", value: create(v1.FileDescriptorResponseSchema, { fileDescriptorProto: index.withDependencies(file, sent) }) };
  switch (request.case) {
    case "listServices":
      return {
        case: "listServicesResponse",
        value: create(v1.ListServiceResponseSchema, { service: index.services.map((name) => ({ name })) }),
      };
    case "fileByFilename":
      return files(index.files.get(request.value), `file not found: ${request.value}`);
    case "fileContainingSymbol":
      return files(index.symbols.get(request.value), `symbol not found: ${request.value}`);
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = request.value;
      const extension = index.extensions.get(containingType)?.find((ext) => ext.number === extensionNumber);
      return files(extension?.file, `extension not found: ${containingType} ${extensionNumber}`);
    }
    case "allExtensionNumbersOfType": {
      if (!index.messages.has(request.value)) return error(Code.NotFound, `message type not found: ${request.value}`);
      const numbers = (index.extensions.get(request.value) ?? []).map((ext) => ext.number);
      return { case: "allExtensionNumbersResponse", value: create(v1.ExtensionNumberResponseSchema, { baseTypeName: request.value, extensionNumber: numbers }) };
    }
    case undefined:
      return error(Code.InvalidArgument, "empty request: set one of the message_request fields");
  }
}

function error(code: Code, message: string): v1.ServerReflectionResponse["messageResponse"] {
  return { case: "errorResponse", value: create(v1.ErrorResponseSchema, { errorCode: code, errorMessage: message }) };
}

/** The files of some services and of everything they import, by file name and by every name they declare. */
class DescriptorIndex {
  readonly services: string[];
  readonly files = new Map<string, DescFile>();
  /** Fully-qualified names (packages excepted) to the file declaring them: types, fields, enum values, services, methods. */
  readonly symbols = new Map<string, DescFile>();
  readonly messages = new Set<string>();
  /** Extensions by the message they extend. */
  readonly extensions = new Map<string, DescExtension[]>();
  readonly #bytes = new Map<DescFile, Uint8Array>();

  constructor(services: Iterable<DescService>) {
    const unique = new Map([...services].map((service) => [service.typeName, service]));
    this.services = [...unique.keys()].sort();
    for (const service of unique.values()) this.#addFile(service.file);
  }

  /** `file` serialised, then each file it imports, directly or not, that `sent` does not name yet (added to it). */
  withDependencies(file: DescFile, sent: Set<string>): Uint8Array[] {
    const out = [this.#serialised(file)];
    sent.add(file.proto.name);
    const visit = (dependency: DescFile) => {
      if (sent.has(dependency.proto.name)) return;
      sent.add(dependency.proto.name);
      out.push(this.#serialised(dependency));
      dependency.dependencies.forEach(visit);
    };
    file.dependencies.forEach(visit);
    return out;
  }

  #serialised(file: DescFile): Uint8Array {
    let bytes = this.#bytes.get(file);
    if (bytes === undefined) this.#bytes.set(file, (bytes = toBinary(FileDescriptorProtoSchema, file.proto)));
    return bytes;
  }

  #addFile(file: DescFile): void {
    if (this.files.has(file.proto.name)) return;
    this.files.set(file.proto.name, file);
    file.dependencies.forEach((dependency) => this.#addFile(dependency));
    const declare = (name: string) => this.symbols.set(name, file);
    const addEnum = (desc: DescEnum) => {
      declare(desc.typeName);
      // Enum values are scoped beside their enum, not inside it (C++ scoping rules).
      const scope = desc.typeName.slice(0, Math.max(0, desc.typeName.lastIndexOf(".")));
      for (const value of desc.values) declare(scope === "" ? value.name : `${scope}.${value.name}`);
    };
    const addExtension = (ext: DescExtension) => {
      declare(ext.typeName);
      const known = this.extensions.get(ext.extendee.typeName) ?? [];
      this.extensions.set(ext.extendee.typeName, [...known, ext]);
    };
    const addMessage = (desc: DescMessage) => {
      declare(desc.typeName);
      this.messages.add(desc.typeName);
      for (const field of desc.fields) declare(`${desc.typeName}.${field.name}`);
      for (const oneof of desc.oneofs) declare(`${desc.typeName}.${oneof.name}`);
      desc.nestedMessages.forEach(addMessage);
      desc.nestedEnums.forEach(addEnum);
      desc.nestedExtensions.forEach(addExtension);
    };
    file.messages.forEach(addMessage);
    file.enums.forEach(addEnum);
    file.extensions.forEach(addExtension);
    for (const service of file.services) {
      declare(service.typeName);
      for (const method of service.methods) declare(`${service.typeName}.${method.name}`);
    }
  }
}
