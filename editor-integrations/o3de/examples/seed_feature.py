# The Python feature example of the GenAIFramework documentation (its "Python feature" page), run on
# genai_bridge. Changed from the seed, each marked `# genai_bridge:`:
#   * the imports (azlmbr.bus / azlmbr.ai -> genai_bridge.bus / genai_bridge.ai);
#   * three lines the seed leaves as pseudo-code, which cannot run as written: it never sets
#     `self.connectionId`, and it uses "..." placeholders for the prompt and the response.
# Run by genai_bridge.script_feature once per conversation, with argv = agent, conversation.
import json
import argparse
import genai_bridge.bus as bus  # genai_bridge: was `import azlmbr.bus as bus`
from genai_bridge.ai import (  # genai_bridge: was `from azlmbr.ai import (`
    ConversationNotificationBus,
    ConversationNotificationBusHandler,
    AIAgentNotificationBusHandler,
    AIAgentRequestBus,
)

parser = argparse.ArgumentParser(
    description="Example of creating a Python feature for the GenAIFramework Gem."
)
parser.add_argument("agent_id", help="The agent id")
parser.add_argument("conversation_id", help="The conversation id")
args = parser.parse_args()

agentId = int(args.agent_id)
conversationId = int(args.conversation_id)

if "myFeatures" not in globals():
    myFeatures = []


class MyFeature:
    def __init__(self, agentId, conversationId):
        self.agentId = agentId
        self.conversationId = conversationId
        self.connectionId = conversationId  # genai_bridge: the seed uses self.connectionId without setting it

        # Create and connect the Conversation handler and add the OnNewMessage callback.
        self.handlerConversation = ConversationNotificationBusHandler()
        self.handlerConversation.connect(self.connectionId)
        self.handlerConversation.add_callback("OnNewMessage", self.OnNewMessage)

        # Create and connect the Agent handler and add the OnAIResponse callback.
        self.handlerAgent = AIAgentNotificationBusHandler()
        self.handlerAgent.connect(self.connectionId)
        self.handlerAgent.add_callback("OnAIResponse", self.OnAIResponse)

    # This function is called when a new message is received from the user (chat widget).
    def OnNewMessage(self, message):
        # The message is a list of length, where the first element is the message from the user.
        prompt = [{"role": "user", "content": [message[0]]}]

        # A call to the agent can be made to get the history of the conversation.
        # The history is a json formatted string consisting of a list of messages with roles and content.
        history = AIAgentRequestBus(bus.Event, "GetHistory", self.agentId)
        jsonHistory = json.loads(history)

        # The prompt can be modified and sent to the agent. The format of the prompt is a list of messages with roles and content.
        fullJsonStringPrompt = json.dumps(prompt)  # genai_bridge: was "..."
        AIAgentRequestBus(bus.Event, "SendPrompt", self.agentId, fullJsonStringPrompt)

    # This function is called when the response from the AI agent is received.
    def OnAIResponse(self, message):
        # The message is a list of length 1, where the first element is the response from the AI agent.
        jsonMessage = json.loads(message[0])

        response = "".join(p.get("text", "") for p in jsonMessage.get("content", [])) or json.dumps(jsonMessage)  # genai_bridge: was "..."
        detailedResponse = ["prompt: the user message", "reply: %d characters" % len(response)]  # genai_bridge: was ["...", "...", ...]

        # The response can be further processed, sent back to the agent or the process can finish by calling the OnFeatureResponse.
        # This function notifies the UI that the response is ready to be displayed and a new message can be sent. This always needs to be called.
        ConversationNotificationBus(bus.Event, "OnFeatureResponse", self.connectionId, response, detailedResponse)


# It is important to add each feature as a separate instance to avoid redefinitions of the same feature and mismatching of the ids used for busses.
myFeatures.append(MyFeature(agentId, conversationId))
